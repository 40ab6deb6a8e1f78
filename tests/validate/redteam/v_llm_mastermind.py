"""Red-team corpus (valid): an LLM-style multi-turn code breaker with helpers, a dataclass,
an enum, itertools/collections/math, type hints, docstrings and f-strings."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from spade.envs import TextEnv

DIGITS = "123456"
CODE_LENGTH = 4


class Outcome(Enum):
    WIN = "win"
    CONTINUE = "continue"
    LOSE = "lose"


@dataclass
class Feedback:
    exact: int
    partial: int

    def render(self) -> str:
        return f"{self.exact} in the right place, {self.partial} right digit in the wrong place"


@dataclass
class GameState:
    secret: str
    history: list[tuple[str, Feedback]] = field(default_factory=list)
    turns_left: int = 8


def score(secret: str, guess: str) -> Feedback:
    """Classic Mastermind scoring."""
    exact = sum(s == g for s, g in zip(secret, guess))
    common = sum((Counter(secret) & Counter(guess)).values())
    return Feedback(exact, common - exact)


def all_codes() -> list[str]:
    return ["".join(p) for p in itertools.product(DIGITS, repeat=CODE_LENGTH)]


class CodeBreakerEnv(TextEnv):
    """Guess a 4-digit code over digits 1-6 in at most 8 guesses."""

    max_turns = 8

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        secret = "".join(self.rng.choice(DIGITS) for _ in range(CODE_LENGTH))
        self.state = GameState(secret=secret, turns_left=self.max_turns)
        n = len(DIGITS) ** CODE_LENGTH
        return (
            f"Break a {CODE_LENGTH}-digit code using digits {DIGITS[0]}-{DIGITS[-1]} "
            f"({n} possibilities, about {math.log2(n):.1f} bits). You have "
            f"{self.max_turns} guesses. Answer with \\boxed{{1234}}.",
            {"turns_left": self.state.turns_left},
        )

    def _outcome(self, fb: Feedback) -> Outcome:
        if fb.exact == CODE_LENGTH:
            return Outcome.WIN
        return Outcome.LOSE if self.state.turns_left <= 0 else Outcome.CONTINUE

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        guess = action.strip()
        self.state.turns_left -= 1
        if len(guess) != CODE_LENGTH or any(c not in DIGITS for c in guess):
            done = self.state.turns_left <= 0
            return f"Invalid guess {guess!r}.", 0.0, done, False, {}
        fb = score(self.state.secret, guess)
        self.state.history.append((guess, fb))
        outcome = self._outcome(fb)
        if outcome is Outcome.WIN:
            return "Cracked it!", 1.0, True, False, {"outcome": outcome.value}
        if outcome is Outcome.LOSE:
            return f"Out of guesses. {fb.render()}.", 0.0, True, False, {"outcome": outcome.value}
        return f"{fb.render()}. {self.state.turns_left} left.", 0.0, False, False, {}

    def solution(self) -> list[str]:
        """Knuth-style consistent-guess strategy (simulated, does not touch self.state)."""
        candidates = all_codes()
        guesses: list[str] = []
        guess = "1122"
        while True:
            guesses.append(guess)
            fb = score(self.state.secret, guess)
            if fb.exact == CODE_LENGTH:
                return guesses
            candidates = [c for c in candidates if score(c, guess) == fb]
            guess = candidates[0]
