"""A batch of validations side by side: same verdicts, in order, failures surface."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade.envs.examples import list_examples
from spade.sandbox import Sandbox, SandboxError, SandboxLimits
from spade.validate import (
    CheckResult,
    Stage,
    ValidationConfig,
    Verdict,
    _batch,
    default_concurrency,
    validate_batch,
    validate_env,
)

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
    with pytest.raises(ValueError, match="seeds for"):
        validate_batch([("x", None)], sandbox=None, seeds=[1, 2])  # type: ignore[arg-type]


def test_each_validation_draws_its_own_secret_seeds(bwrap_sandbox: Sandbox) -> None:
    """Unless configured, every validation's base seed is new (and recorded), so the same
    environment is probed on other seeds each time; a recorded seed replays it exactly."""
    source = list_examples()[0].source()
    first, second = (validate_env(source, sandbox=bwrap_sandbox) for _ in range(2))
    assert first.seed is not None and second.seed is not None and first.seed != second.seed
    again = validate_env(source, sandbox=bwrap_sandbox, config=ValidationConfig(seed=first.seed))
    assert again.seed == first.seed
    assert _play_record(again) == _play_record(first)


SLEEPS_IN_STEP = (Path(__file__).parent / "redteam" / "b_sleep_step.py").read_text()


def test_a_verdict_knows_when_a_time_limit_decided_it() -> None:
    limits = SandboxLimits(call_timeout_s=0.3)
    with Sandbox("bwrap", limits=limits) as box:
        hung = validate_env(SLEEPS_IN_STEP, sandbox=box)
        assert not hung.valid and hung.timed_out, hung.reason
        over = validate_env(SLEEPS_IN_STEP, sandbox=box, config=ValidationConfig(
            time_budget_s=0.2))  # fmt: skip
        assert not over.valid and over.timed_out and "time budget" in over.reason
        fine = validate_env(list_examples()[0].source(), sandbox=box)
        assert fine.valid and not fine.timed_out
        broken = validate_env(BROKEN, sandbox=box)
        assert not broken.valid and not broken.timed_out


def test_a_verdict_a_time_limit_decided_is_taken_again_alone(
    bwrap_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Side by side, the first validation of one source comes back as a timeout (as a
    busy machine can make it); the batch validates it again alone and keeps that."""
    real, calls = validate_env, []
    flaky = list_examples()[1].source()

    def busy_once(source: str, **kwargs: object) -> Verdict:
        calls.append(source)
        if source == flaky and calls.count(flaky) == 1:
            check = CheckResult(Stage.LOAD, False, "load timed out", 5.0, {"fault": "timeout"})
            return Verdict(False, Stage.LOAD, "load timed out", (check,))
        return real(source, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_batch, "validate_env", busy_once)
    sources = [e.source() for e in list_examples()]
    seen: list[tuple[int, bool]] = []
    verdicts = validate_batch([(s, None) for s in sources], sandbox=bwrap_sandbox,
                              concurrency=3, progress=lambda n, v: seen.append((n, v.valid)))
    assert all(v.valid for v in verdicts) and calls.count(flaky) == 2
    assert seen == [(n, True) for n in range(1, len(sources) + 1)]


REDTEAM = Path(__file__).resolve().parent / "redteam"
#: Hostile and buggy modules of the kinds that go for the parent, the verdicts or the
#: regret, each validated between valid ones.
NEIGHBOURS = {
    "h_tool_schema_huge_required.py": None,
    "b_lone_surrogate.py": None,
    "b_reward_huge_int.py": None,
    "h_second_play_loses.py": None,
    "h_hint_password_until_solution.py": "Or just answer 'swordfish'.",
}


def _play_record(verdict: Verdict) -> list[tuple[object, ...]]:
    """What a verdict says about the environment (timings left out)."""
    return [(c.stage, c.passed, c.reason, c.details) for c in verdict.checks]


def test_hostile_neighbours_change_no_valid_verdict(bwrap_sandbox: Sandbox) -> None:
    """Side by side, three at a time, on the same seeds: every valid module gets the
    verdict it gets alone, check by check, whatever hostile module runs next to it."""
    examples = [(e.source(), e.hint) for e in list_examples()]
    valid = [examples[0], examples[1 % len(examples)]]
    alone = [validate_env(s, hint=h, sandbox=bwrap_sandbox, config=ValidationConfig(seed=77))
             for s, h in valid]  # fmt: skip
    assert all(v.valid for v in alone)
    for name, hint in NEIGHBOURS.items():
        items = [valid[0], ((REDTEAM / name).read_text(), hint), valid[1]]
        got = validate_batch(items, sandbox=bwrap_sandbox, concurrency=3, seeds=[77, 5, 77])
        assert not got[1].valid, name
        for mine, single in zip([got[0], got[2]], alone, strict=True):
            assert mine.valid and _play_record(mine) == _play_record(single), name
            assert mine.seed == 77
