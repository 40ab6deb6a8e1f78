"""One-shot arithmetic: the sum of two one-digit numbers, answered in \\boxed{}."""

from __future__ import annotations

import re
from typing import Any

from spade.envs import TextEnv


class SmallSumEnv(TextEnv):
    """A single answer: the last integer of the action (the boxed text, else the whole
    reply) must be the sum. A small instruct model gets roughly a third right untrained:
    it often answers in words, rambles on, or adds wrongly."""

    max_turns = 1

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.a = self.rng.randint(1, 9)
        self.b = self.rng.randint(1, 9)
        return (f"What is {self.a} + {self.b}? Reply with only the number in \\boxed{{}}.", {})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        numbers = re.findall(r"-?\d+", action)
        correct = bool(numbers) and int(numbers[-1]) == self.a + self.b
        return ("Correct." if correct else "Incorrect."), float(correct), True, False, {}

    def solution(self) -> list[str]:
        return [str(self.a + self.b)]
