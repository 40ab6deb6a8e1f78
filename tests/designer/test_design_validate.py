"""The hint-leak check runs through the real validator in the real sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spade.designer import hint_leaked, parse_design, validate_design
from spade.sandbox import Sandbox
from spade.validate import Stage

pytestmark = pytest.mark.bwrap

CONST_ENV = '''
from spade.envs import TextEnv


class CancelEnv(TextEnv):
    """The random factor cancels, so only a mod 4 changes the answer (42 to 45)."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(2, 40)
        return (f"Let a = {self.a}. Compute (a * 6 * 7) / a + (a mod 4) and give it in "
                "\\\\boxed{{}}."), {}

    def step(self, action):
        ok = action.strip() == str(42 + self.a % 4)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(42 + self.a % 4)]
'''


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(isolation="bwrap") as sb:
        yield sb


def _reply(hint: str) -> str:
    return f"<think>easy</think>\n```python\n{CONST_ENV}```\n<hint>{hint}</hint>"


def test_honest_hint_passes(sandbox: Sandbox) -> None:
    design = parse_design(_reply("The factor a appears above and below the line."))
    verdict = validate_design(design, sandbox=sandbox)
    assert verdict.valid, verdict.reason
    assert not hint_leaked(verdict)
    assert any(c.stage is Stage.HINT_LEAK and c.passed for c in verdict.checks)


def test_hint_stating_the_answer_is_a_leak(sandbox: Sandbox) -> None:
    design = parse_design(_reply("The result is 42, 43, 44 or 45."))
    assert design.ok
    verdict = validate_design(design, sandbox=sandbox)
    assert not verdict.valid and verdict.stage is Stage.HINT_LEAK and hint_leaked(verdict)


def test_design_without_source_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="no code block"):
        validate_design(parse_design("nothing"), sandbox=sandbox)
