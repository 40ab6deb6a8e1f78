"""One-shot counting puzzle: the sum of the numbers up to N divisible by a or by b."""

from __future__ import annotations

import re
from typing import Any

from spade.envs import TextEnv


class DivisorSumEnv(TextEnv):
    """A single answer in \\boxed{}; the total runs into the tens of thousands."""

    max_turns = 1

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.limit = self.rng.randint(300, 2000)
        while True:
            self.a, self.b = sorted(self.rng.sample(range(3, 16), 2))
            if self.b % self.a:  # neither divides the other, so both conditions matter
                break
        self.answer = sum(n for n in range(1, self.limit + 1) if n % self.a == 0 or n % self.b == 0)
        return (
            f"What is the sum of all integers n with 1 <= n <= {self.limit} such that n is "
            f"divisible by {self.a} or by {self.b} (or both)? Give the number in \\boxed{{}}.",
            {},
        )

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        text = re.sub(r"[\s,]", "", action)
        correct = re.fullmatch(r"\d+", text) is not None and int(text) == self.answer
        return ("Correct." if correct else "Incorrect."), float(correct), True, False, {}

    def solution(self) -> list[str]:
        return [str(self.answer)]
