"""A rich progress bar with one advance per training step and a status line."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["StepProgress"]


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:.0f}%" if pct else f"{x:.3g}"


class StepProgress:
    """``say(text)`` sets the status; ``step(n, metrics)`` advances and logs a summary."""

    def __init__(self, total: int) -> None:
        self.console = Console(file=sys.stderr)
        self.progress = Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.description}"),
                                 console=self.console, transient=False)
        self.task = self.progress.add_task("starting", total=total)

    def say(self, text: str) -> None:
        self.progress.update(self.task, description=text[:80])
        if not self.console.is_terminal:  # a log file gets every status line
            self.console.log(text)

    def step(self, step: int, m: dict[str, Any]) -> None:
        agent, train, d = m["agent"], m.get("train", {}), m.get("designer")
        designer = "" if d is None else f" | designs valid {d['valid']}/{d['designs']}"
        line = (f"step {step + 1}: agent solve {_fmt(agent['solve_rate_unhinted'], True)}"
                f"{designer} | loss {_fmt(train.get('loss'))} | "
                f"{m['timing_s'].get('step_s', 0):.1f}s")
        self.progress.update(self.task, completed=step + 1, description=line)
        self.console.log(line)

    def __enter__(self) -> StepProgress:
        self.progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.progress.stop()
