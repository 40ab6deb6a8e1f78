"""Attempts that only happen at teardown still make the verdict invalid (SAFETY)."""

from __future__ import annotations

import textwrap

import pytest

from spade.sandbox import Sandbox
from spade.validate import Stage, validate_env

_GAME = """
import atexit

from spade.envs import TextEnv


def _late():
    {attempt}


class LateEnv(TextEnv):
    max_turns = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.target = self.rng.randint(1, 10**6)
        {arm}
        return "Guess the number.", {{}}

    def step(self, action):
        won = action.strip() == str(self.target)
        return "correct" if won else "wrong", float(won), won, False, {{}}

    def solution(self):
        return [str(self.target)]
"""

# Obfuscated so that the static scan cannot see the capability: only teardown reveals it.
_NETWORK = "getattr(__import__('so' + 'cket'), 'create_connection')(('127.0.0.1', 9), 0.2)"


def _env(arm: str) -> str:
    return textwrap.dedent(_GAME).format(attempt=_NETWORK, arm=arm)


@pytest.mark.parametrize(
    "arm",
    [
        "atexit.register(_late)",
        "self.__class__.__del__ = lambda s: _late()",
    ],
    ids=["atexit", "del"],
)
def test_teardown_attempt_is_a_safety_failure(bwrap_sandbox: Sandbox, arm: str) -> None:
    verdict = validate_env(_env(arm), sandbox=bwrap_sandbox)
    assert not verdict.valid
    assert verdict.stage == Stage.SAFETY
    assert "network" in verdict.reason
