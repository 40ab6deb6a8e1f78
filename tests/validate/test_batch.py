"""A batch of validations side by side: same verdicts, in order, failures surface."""

from __future__ import annotations

import pytest

from spade.envs.examples import list_examples
from spade.sandbox import Sandbox, SandboxError
from spade.validate import Stage, default_concurrency, validate_batch, validate_env

BROKEN = "class NotAnEnv:\n    pass\n"


def test_a_batch_gives_each_environment_its_own_verdict(bwrap_sandbox: Sandbox) -> None:
    sources = [e.source() for e in list_examples()]
    items = [(s, None) for s in sources] + [(BROKEN, None)]
    alone = [validate_env(s, hint=h, sandbox=bwrap_sandbox) for s, h in items]
    together = validate_batch(items, sandbox=bwrap_sandbox, concurrency=3)
    assert [(v.valid, v.stage, v.class_name) for v in together] == [
        (v.valid, v.stage, v.class_name) for v in alone
    ]
    assert together[-1].stage == Stage.SOURCE and all(v.valid for v in together[:-1])


def test_a_sandbox_failure_stops_the_batch() -> None:
    with pytest.warns(RuntimeWarning):
        box = Sandbox("none", allow_weak=True)
    box.close()
    with pytest.raises(SandboxError):
        validate_batch([(e.source(), None) for e in list_examples()], sandbox=box,
                       concurrency=2)  # fmt: skip


def test_concurrency_is_checked_and_defaults_to_the_cpus() -> None:
    assert 1 <= default_concurrency() <= 8
    with pytest.raises(ValueError, match="at least 1"):
        validate_batch([], sandbox=None, concurrency=0)  # type: ignore[arg-type]
    assert validate_batch([], sandbox=None) == []  # type: ignore[arg-type]
