"""Mastermind: deduce a hidden 4-digit code from exact/misplaced feedback in 8 tries."""

from __future__ import annotations

import re
from typing import Any

from spade.envs import TextEnv

DIGITS = "123456"
LENGTH = 4


def score(secret: str, guess: str) -> tuple[int, int]:
    """(digits in the right place, right digits in the wrong place)."""
    exact = sum(s == g for s, g in zip(secret, guess, strict=True))
    common = sum(min(secret.count(d), guess.count(d)) for d in DIGITS)
    return exact, common - exact


class CodeBreakerEnv(TextEnv):
    """1296 possible codes and 8 guesses: the feedback has to be used, not luck."""

    max_turns = 8

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.code = "".join(self.rng.choice(DIGITS) for _ in range(LENGTH))
        self.guesses_left = self.max_turns
        return (
            f"Break my secret code: {LENGTH} digits, each from 1 to 6, repeats allowed. "
            f"After each guess I report how many digits are in the right place and how many "
            f"are correct but in the wrong place. You have {self.max_turns} guesses. "
            "Answer with a guess such as \\boxed{1122}.",
            {},
        )

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.guesses_left -= 1
        done = self.guesses_left <= 0
        left = "No guesses left." if done else f"{self.guesses_left} guesses left."
        guess = re.sub(r"[\s,]", "", action)
        if not re.fullmatch(f"[{DIGITS}]{{{LENGTH}}}", guess):
            return f"A guess is {LENGTH} digits from 1 to 6. {left}", 0.0, done, False, {}
        if guess == self.code:
            return "You broke the code!", 1.0, True, False, {}
        exact, misplaced = score(self.code, guess)
        feedback = f"{guess}: {exact} in the right place, {misplaced} in the wrong place."
        return f"{feedback} {left}", 0.0, done, False, {}

    def solution(self) -> list[str]:
        return [self.code]
