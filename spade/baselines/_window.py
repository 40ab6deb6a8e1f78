"""RLVE's sliding-window difficulty controller, one window per environment.

Each environment keeps a window ``[low, high]`` of difficulties. Problems are drawn with a
difficulty uniform over the window; only plays at ``high`` count. After ``tau_num`` counted
attempts the controller checks: if their success rate is at least ``tau_acc``, ``high``
moves up by one and ``low`` follows so the window is at most ``width`` wide
(``low = max(low, high - width + 1)``); either way the counters start again. Results are
recorded in a fixed order, so the state after a step depends only on the step's plays.

The whole state is plain JSON (:meth:`SlidingWindow.state` / :meth:`SlidingWindow.restore`)
and is checkpointed with the run, so a resumed run continues every window exactly.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from spade.errors import UserError


class WindowConfig(BaseModel):
    """The controller's constants (RLVE's defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tau_num: int = Field(default=128, ge=1)
    tau_acc: float = Field(default=0.9, ge=0.0, le=1.0)
    width: int = Field(default=4, ge=1)
    initial: int = Field(default=0, ge=0)


@dataclass
class Window:
    """One environment's window and the counters of plays at its ``high``."""

    low: int
    high: int
    attempts: int = 0
    successes: int = 0


class SlidingWindow:
    """Per-environment difficulty windows (see the module docstring)."""

    def __init__(self, env_ids: Iterable[str], config: WindowConfig | None = None) -> None:
        self.config = config or WindowConfig()
        start = self.config.initial
        self.windows: dict[str, Window] = {e: Window(start, start) for e in env_ids}
        if not self.windows:
            raise UserError("the difficulty controller needs at least one environment")

    def window(self, env_id: str) -> tuple[int, int]:
        w = self.windows[env_id]
        return w.low, w.high

    def sample(self, env_id: str, rng: random.Random) -> int:
        """A difficulty drawn uniformly from the environment's window."""
        w = self.windows[env_id]
        return rng.randint(w.low, w.high)

    def record(self, env_id: str, difficulty: int, success: bool) -> bool:
        """Count one play; True when this play triggered a check that moved the window."""
        w = self.windows[env_id]
        if difficulty != w.high:
            return False
        w.attempts += 1
        w.successes += int(bool(success))
        if w.attempts < self.config.tau_num:
            return False
        moved = w.successes / w.attempts >= self.config.tau_acc
        if moved:
            w.high += 1
            w.low = max(w.low, w.high - self.config.width + 1)
        w.attempts = w.successes = 0
        return moved

    def metrics(self) -> dict[str, Any]:
        """``difficulty/<env>/low|high|attempts`` for the per-step log."""
        out: dict[str, Any] = {}
        for env_id, w in self.windows.items():
            out[f"difficulty/{env_id}/low"] = w.low
            out[f"difficulty/{env_id}/high"] = w.high
            out[f"difficulty/{env_id}/attempts_at_high"] = w.attempts
        return out

    def state(self) -> dict[str, Any]:
        return {"config": self.config.model_dump(),
                "windows": {e: asdict(w) for e, w in self.windows.items()}}

    @classmethod
    def restore(cls, state: Mapping[str, Any]) -> SlidingWindow:
        """The controller a :meth:`state` snapshot describes."""
        try:
            config = WindowConfig.model_validate(state["config"])
            windows = {str(e): Window(**w) for e, w in state["windows"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"unreadable difficulty-controller state ({exc})") from None
        controller = cls(windows, config)
        controller.windows = windows
        return controller
