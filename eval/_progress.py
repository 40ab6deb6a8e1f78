"""Progress lines on stderr: rewritten in place on a terminal, occasional lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._suite = ""
        self._total = 0
        self._done = 0
        self._t0 = 0.0
        self._last = 0.0

    def start(self, suite: str, total: int, already: int) -> None:
        self._suite, self._total, self._done = suite, total, already
        self._t0 = self._last = time.monotonic()
        self._base = already
        if already:
            self.note(f"[{suite}] resuming: {already}/{total} samples already done")
        self._show(force=True)

    def advance(self, n: int) -> None:
        self._done += n
        self._show()

    def note(self, text: str) -> None:
        if not self.quiet:
            if self.tty:
                self.stream.write("\r\033[K")
            self.stream.write(text + "\n")
            self.stream.flush()

    def finish(self, text: str) -> None:
        self.note(text)

    def _show(self, force: bool = False) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if not force and not self.tty and now - self._last < 10 and self._done < self._total:
            return
        self._last = now
        rate = (self._done - self._base) / max(now - self._t0, 1e-9)
        line = f"[{self._suite}] {self._done}/{self._total} samples  {rate:.1f}/s"
        if self.tty:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
