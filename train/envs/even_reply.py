"""One-shot parity game: win by answering with an even number of characters.

Not a reasoning task: it exists so that even a random model wins about half the time, which
gives every GRPO group reward variance (tests of the gradient plumbing and of resuming).
"""

from __future__ import annotations

from typing import Any

from spade.envs import TextEnv


class EvenReplyEnv(TextEnv):
    """A single move; reward 1 when the stripped action has an even, non-zero length."""

    max_turns = 1

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.word = self.rng.choice(["apple", "river", "stone", "cloud", "ember"])
        return (f"Reply with a word of even length (for example not '{self.word}') in "
                "\\boxed{}.", {})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        n = len(action.strip())
        won = n > 0 and n % 2 == 0
        return ("Even." if won else "Odd."), float(won), True, False, {}

    def solution(self) -> list[str]:
        return ["ab"]
