"""The game contract: a Gymnasium env whose observations and actions are text."""

from __future__ import annotations

import random
from typing import Any

import gymnasium
from gymnasium import spaces

#: Upper bound on observation/action text length; the sandbox enforces its own byte caps.
MAX_TEXT_CHARS = 65_536


class TextSpace(spaces.Text):
    """Any string of at most ``max_length`` characters.

    ``spaces.Text`` only contains strings over a finite charset (alphanumerics by default),
    which would reject ordinary prose; sampling still draws from that charset.
    """

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class TextEnv(gymnasium.Env[str, str]):
    """Base class for generated game environments.

    Subclasses call ``super().reset(seed=seed)`` first and then draw ALL randomness from
    ``self.rng`` (a ``random.Random``) or ``self.np_random`` (a numpy ``Generator``). Both
    are per-instance, so seeding one environment never disturbs another one.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's declaration)
    #: Episode cap; the episode runner also applies a global cap.
    max_turns: int = 25
    #: An episode whose return reaches this value counts as a win.
    success_threshold: float = 1.0

    observation_space = TextSpace(max_length=MAX_TEXT_CHARS)
    action_space = TextSpace(max_length=MAX_TEXT_CHARS)

    rng: random.Random

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None or not hasattr(self, "rng"):
            # Derive the stdlib RNG from gymnasium's generator so one seed fixes both.
            self.rng = random.Random(int(self.np_random.integers(0, 2**63 - 1)))
        return "", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise NotImplementedError

    def solution(self) -> list[Any] | None:
        """Actions that win from the state right after ``reset``; ``None`` if unknown."""
        return None
