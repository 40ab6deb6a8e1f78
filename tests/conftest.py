"""Fixtures shared by every test package."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")
PR_SET_CHILD_SUBREAPER = 36


def _live_children() -> set[int]:
    """Our children that are still running (zombies are reaped and not counted)."""
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) != me:
            continue
        if state == "Z":
            os.waitpid(int(entry.name), os.WNOHANG)
        else:
            found.add(int(entry.name))
    return found


@pytest.fixture
def run_reaped() -> Callable[[Callable[[], T]], tuple[T, float, set[int]]]:
    """Run ``command()`` as a child subreaper: ``(result, seconds, pids it left running)``.

    As a subreaper this process inherits anything the command leaves behind, so a daemon
    that escaped the command's own cleanup shows up in the returned set.
    """

    def run(command: Callable[[], T]) -> tuple[T, float, set[int]]:
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        try:
            before = _live_children()
            began = time.monotonic()
            result = command()
            elapsed = time.monotonic() - began
            time.sleep(0.3)
            left = _live_children() - before
        finally:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        return result, elapsed, left

    return run
