"""Training progress on stderr: step k/N, the phase each role is in, elapsed time and ETA.

Every status line reads ``step k/N | phase | elapsed 5m02s | ETA 12m30s``: the phase comes
from the rollout (designing, validating, playing) and the backend (updating); the ETA
from the mean duration of the steps this process finished. A phase that runs long (a
designer step generating for many minutes) repeats its line every ``heartbeat_s`` seconds
with the time spent in it, so a log never goes quiet for longer. On a terminal a bar is
drawn as well.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["StepProgress", "duration"]


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:.0f}%" if pct else f"{x:.3g}"


def duration(seconds: float) -> str:
    """``45s``, ``5m02s``, ``2h05m``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class StepProgress:
    """``say(text)`` sets the phase; ``step(n, metrics)`` marks step ``n`` (0-based) done."""

    def __init__(self, total: int, *, done: int = 0, heartbeat_s: float = 30.0,
                 console: Console | None = None) -> None:
        # log_path=False: status lines name no source file of ours
        self.console = console or Console(file=sys.stderr, log_path=False)
        if console is None and not self.console.is_terminal:  # a log: lines unwrapped
            self.console = Console(file=sys.stderr, log_path=False, width=240)
        self.total, self.done, self.heartbeat_s = total, min(done, total), heartbeat_s
        self._began = self._phase_began = self._last_line = time.monotonic()
        self._phase = "starting"
        self._step_seconds: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="train-heartbeat", daemon=True)
        self.progress = Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 TextColumn("{task.description}"), console=self.console,
                                 transient=False)
        self.task = self.progress.add_task("starting", total=total, completed=self.done)

    # -- what the line says -----------------------------------------------------------
    def eta(self) -> str:
        """Time left at the mean step duration of this process ("--" before a step)."""
        if self.done >= self.total:
            return "0s"
        if not self._step_seconds:
            return "--"
        mean = sum(self._step_seconds) / len(self._step_seconds)
        return duration(mean * (self.total - self.done))

    def status(self, text: str | None = None) -> str:
        now = time.monotonic()
        current = min(self.done + 1, self.total)
        return (f"step {current}/{self.total} | {text or self._phase} | elapsed "
                f"{duration(now - self._began)} | ETA {self.eta()}")

    def _emit(self, line: str) -> None:
        with self._lock:
            self._last_line = time.monotonic()
        self.progress.update(self.task, description=line[:100])
        self.console.log(line, markup=False, highlight=False)

    # -- the rollout and the backend ----------------------------------------------------
    def say(self, text: str) -> None:
        """A new phase (or news within one): logged with the step, elapsed time and ETA."""
        with self._lock:
            self._phase, self._phase_began = text, time.monotonic()
        self._emit(self.status(text))

    def step(self, step: int, m: dict[str, Any]) -> None:
        agent, train, d = m["agent"], m.get("train", {}), m.get("designer")
        seconds = float(m.get("timing_s", {}).get("step_s", 0) or 0)
        if seconds > 0:
            self._step_seconds.append(seconds)
        self.done = min(step + 1, self.total)
        designer = "" if d is None else f" | designs valid {d['valid']}/{d['designs']}"
        line = (f"step {step + 1}/{self.total} done: agent solve "
                f"{_fmt(agent['solve_rate_unhinted'], True)}{designer} | loss "
                f"{_fmt(train.get('loss'))} | {duration(seconds)} | elapsed "
                f"{duration(time.monotonic() - self._began)} | ETA {self.eta()}")
        self.progress.update(self.task, completed=self.done)
        with self._lock:
            self._phase, self._phase_began = "next step", time.monotonic()
        self._emit(line)

    # -- the heartbeat ------------------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(min(5.0, self.heartbeat_s)):
            with self._lock:
                quiet_for = time.monotonic() - self._last_line
                phase, began = self._phase, self._phase_began
            if quiet_for >= self.heartbeat_s:
                self._emit(self.status(f"{phase} (still working, "
                                       f"{duration(time.monotonic() - began)} in this phase)"))

    def __enter__(self) -> StepProgress:
        if self.console.is_terminal:  # a bar only where it can be redrawn
            self.progress.start()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.console.is_terminal:
            self.progress.stop()
