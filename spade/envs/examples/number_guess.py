"""Find a hidden number with higher/lower feedback; the budget only allows a binary search."""

from __future__ import annotations

import re
from typing import Any

from spade.envs import TextEnv


class NumberGuessEnv(TextEnv):
    """1023 candidates and 10 guesses: only halving the range every turn is sure to win."""

    max_turns = 10

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.low = self.rng.randint(100, 5000)
        self.high = self.low + 1022
        self.secret = self.rng.randint(self.low + 1, self.high - 1)
        self.guesses_left = self.max_turns
        return (
            f"I am thinking of a whole number from {self.low} to {self.high}. You have "
            f"{self.max_turns} guesses; after each wrong guess I tell you whether my number "
            "is higher or lower. Put each guess in \\boxed{}.",
            {},
        )

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.guesses_left -= 1
        out_of_guesses = self.guesses_left <= 0
        left = "No guesses left." if out_of_guesses else f"{self.guesses_left} guesses left."
        if not re.fullmatch(r"[-+]?\d{1,9}", action.strip()):
            return f"That is not a whole number. {left}", 0.0, out_of_guesses, False, {}
        guess = int(action.strip())
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        direction = "higher" if guess < self.secret else "lower"
        return f"My number is {direction}. {left}", 0.0, out_of_guesses, False, {}

    def solution(self) -> list[str]:
        low, high, guesses = self.low, self.high, []
        while True:
            middle = (low + high) // 2
            guesses.append(str(middle))
            if middle == self.secret:
                return guesses
            if middle < self.secret:
                low = middle + 1
            else:
                high = middle - 1
