"""Progress of an evaluation run on stderr: one bar per suite and one for the whole run.

On a terminal the bars are drawn with rich (count, rate, elapsed, ETA), updated as each
sample is scored; elsewhere (a log file, CI) a plain line is written at most every
``line_every_s`` seconds. ``quiet`` silences everything this module writes, including the
chatter of data generators (Reasoning Gym prints dots while it builds items).
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Table
from rich.text import Text


def rate_text(per_s: float | None) -> str:
    """``3.2 it/s`` when fast, ``12.5 s/it`` when slow (never a misleading ``0.0/s``)."""
    if per_s is None or per_s <= 0:
        return "-- it/s"
    return f"{per_s:.1f} it/s" if per_s >= 1 else f"{1 / per_s:.1f} s/it"


def eta_text(remaining: int, per_s: float | None) -> str:
    if remaining <= 0:
        return "0:00:00"
    if not per_s or per_s <= 0:
        return "-:--:--"
    s = int(remaining / per_s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(rate_text(task.fields.get("rate")), style="progress.data.speed")


class _Chatter(io.TextIOBase):
    """Swallows progress dots; forwards other complete lines (unless quiet)."""

    def __init__(self, target: TextIO | None) -> None:
        self._target = target
        self._buf = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._emit(line)
        return len(text)

    def _emit(self, line: str) -> None:
        if self._target is not None and line.strip(". \r\t"):
            self._target.write(line + "\n")

    def close_out(self) -> None:
        if self._buf:
            self._emit(self._buf)
            self._buf = ""


class Progress:
    """Per-suite and overall progress; rates count samples since this process started."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False,
                 line_every_s: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.line_every_s = line_every_s
        self._suite = ""
        self._total = self._done = self._base = 0
        self._t0 = self._last = 0.0
        self._suites: list[str] = []
        self._finished = 0
        self._bars: RichProgress | None = None
        self._suite_task: Any = None
        self._run_task: Any = None

    # -- run level ------------------------------------------------------------------
    def begin(self, suites: Sequence[str]) -> None:
        """The suites of the run, in order (for the overall bar)."""
        self._suites = list(suites)
        if self.quiet or not self.tty:
            return
        self._bars = RichProgress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            _RateColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=Console(file=self.stream), transient=False,
        )
        self._bars.start()
        self._run_task = self._bars.add_task(self._run_label(), total=len(self._suites))

    def end(self) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def _run_label(self) -> str:
        return f"all suites: {self._finished}/{len(self._suites)} done"

    # -- suite level ----------------------------------------------------------------
    def start(self, suite: str, total: int, already: int) -> None:
        self._suite, self._total, self._done, self._base = suite, total, already, already
        self._t0 = self._last = time.monotonic()
        if already:
            self.note(f"[{suite}] resuming: {already}/{total} samples already done")
        if self._bars is not None:
            if self._suite_task is not None:
                self._bars.remove_task(self._suite_task)
            self._suite_task = self._bars.add_task(
                escape(f"[{suite}]"), total=total, completed=already, rate=None)
        self._line(force=True)

    def advance(self, n: int = 1) -> None:
        """``n`` more samples scored (call per sample, so rates move per item)."""
        self._done += n
        if self._bars is not None and self._suite_task is not None:
            self._bars.update(self._suite_task, completed=self._done, rate=self.rate())
        self._line()

    def rate(self) -> float | None:
        elapsed = time.monotonic() - self._t0
        new = self._done - self._base
        return new / elapsed if new > 0 and elapsed > 0 else None

    def finish(self, text: str) -> None:
        self._finished += 1
        if self._bars is not None and self._run_task is not None:
            self._bars.update(self._run_task, completed=self._finished,
                              description=self._run_label())
        self.note(text)

    def note(self, text: str) -> None:
        if self.quiet:
            return
        if self._bars is not None:
            self._bars.console.print(text, markup=False, highlight=False)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    @contextlib.contextmanager
    def loading(self, suite: str) -> Iterator[None]:
        """Around data loading: generator chatter is dropped (dots) or passed on as lines."""
        self.note(f"[{suite}] loading data")
        with self.chatter():
            yield

    @contextlib.contextmanager
    def chatter(self) -> Iterator[None]:
        """Library output in this block: progress dots dropped, other lines passed on
        (everything dropped when quiet)."""
        sink = _Chatter(None if self.quiet else self.stream)
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            try:
                yield
            finally:
                sink.close_out()

    def _line(self, force: bool = False) -> None:
        if self.quiet or self._bars is not None:
            return
        now = time.monotonic()
        if not force and now - self._last < self.line_every_s and self._done < self._total:
            return
        self._last = now
        rate = self.rate()
        self.stream.write(
            f"[{self._suite}] {self._done}/{self._total} samples  {rate_text(rate)}  "
            f"ETA {eta_text(self._total - self._done, rate)}\n"
        )
        self.stream.flush()

    # -- the end --------------------------------------------------------------------
    def summary(self, suites: Mapping[str, Mapping[str, Any]], preset: str | None) -> None:
        """A table of every suite's status and score (stderr; nothing when quiet)."""
        if self.quiet:
            return
        title = "evaluation summary" + (f" (preset: {preset})" if preset else "")
        table = Table(title=title)
        for col in ("suite", "status", "metric", "score", "± 95%", "items"):
            table.add_column(col, justify="left" if col in ("suite", "status") else "right")
        for sid, e in suites.items():
            score, err = e.get("score"), e.get("stderr")
            table.add_row(
                sid, str(e.get("status")), str(e.get("metric") or ""),
                "" if score is None else f"{100 * score:.1f}%",
                "" if err is None else f"{196 * err:.1f}",
                str(e.get("n_items") or 0),
            )
        Console(file=self.stream, width=None if self.tty else 100).print(table)
