"""What a call left running: threads that still act, and signal timers still armed.

A thread that outlives its call may run code later, between two calls, when nobody
watches: it can flip the environment's state after a while (a ``sched`` or
``threading.Timer`` thread, a sleeper submitted to a pool), so an answer is judged by
*when* it came. Who started the thread (the environment, or a library while it was
imported) says nothing about what it will do, so no thread is exempt for its origin.
What counts is its state, read from the kernel: a thread blocked without a timeout on a
futex (a lock, a condition, an idle pool's queue) can only be woken by another thread or
by a later call into the environment, whose own check judges it then; any other thread
-- running, sleeping, waiting with a timeout, in any other system call -- is one that
will act by itself. A signal timer left armed (``signal.alarm``, ``setitimer``) likewise
runs a handler later, so it is reported the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: Seconds a thread started during a call may take to settle (finish, or block for good)
#: after the call returned before it counts as outliving the call.
THREAD_GRACE_S = 0.05
#: ``futex`` system call numbers by machine; where unknown, every live thread counts.
FUTEX_NR = {"x86_64": 202, "aarch64": 98, "riscv64": 98, "ppc64le": 221, "s390x": 238}
#: ``FUTEX_WAIT`` and ``FUTEX_WAIT_BITSET`` (the op without its private/clock flags).
_FUTEX_WAITS = (0, 9)


def make_thread_check(
    teardown: tuple[Any, ...], pread: Callable[..., bytes], stat_fd: int,
    files: tuple[Any, ...], report: Callable[[str, str], None],
) -> Callable[[str, bool], None]:  # fmt: skip
    """``check_threads(method, thorough)``: report threads and timers the call left acting.

    Threads are counted after every call by ``threading``'s tables and ``_thread``'s own
    count (two dict sizes), and after a ``thorough`` call (load, reset, solution,
    finalize) by the kernel (``/proc/self/stat``, opened before any environment code),
    which also sees native threads and raw threads that had not started yet. Only when
    a count is above zero are the threads' states read (``/proc/<pid>/task/*/syscall``).
    ``files``: the raw ``os.open``, ``os.close``, ``os.listdir`` and ``signal.getitimer``.
    """
    _, _, _, _, thread_count, monotonic, sleep = teardown[:7]
    open_, close, listdir, getitimer = files
    len_, int_, max_ = len, int, max
    value_error, os_error = ValueError, OSError
    threading_module = __import__("sys").modules["threading"]  # bound before env code
    active, limbo = threading_module._active, threading_module._limbo
    task_dir = f"/proc/{os.getpid()}/task"
    # The serving thread's id as ``task_dir`` names it: the main thread's id is the pid that
    # ``/proc`` shows in the stat file, which is the sandbox's pid when the worker has a pid
    # namespace of its own (``get_native_id`` would give the worker's own numbering).
    serving = pread(stat_fd, 64, 0).split(b" ", 1)[0].decode()
    futex = FUTEX_NR.get(os.uname().machine)
    rdonly = os.O_RDONLY | os.O_CLOEXEC
    timers = (("ITIMER_REAL", 0), ("ITIMER_VIRTUAL", 1), ("ITIMER_PROF", 2))

    def os_threads() -> int:
        text = pread(stat_fd, 1024, 0)
        return int_(text[text.rindex(b")") + 2 :].split()[17]) - 1

    def python_threads() -> int:
        # What ``threading.enumerate()`` would list besides the serving thread, read as
        # two dict sizes; ``_thread``'s own count also sees threads started without it.
        return max_(len_(active) + len_(limbo) - 1, thread_count())

    def blocked_for_good(tid: str) -> bool:
        """Is thread ``tid`` in a futex wait without a timeout?"""
        try:
            fd = open_(f"{task_dir}/{tid}/syscall", rdonly)
        except os_error:
            return True  # it has exited
        try:
            fields = pread(fd, 256, 0).split()
        except os_error:
            return True  # it exited between the open and the read
        finally:
            close(fd)
        if futex is None or len_(fields) < 5:
            return False  # "running", or not in a system call
        try:
            number, op, timeout = int_(fields[0]), int_(fields[2], 16), int_(fields[4], 16)
        except value_error:
            return False
        return number == futex and op & 0x7F in _FUTEX_WAITS and timeout == 0

    def acting() -> int:
        """Threads other than the serving one that are not blocked for good."""
        return len_([t for t in listdir(task_dir) if t != serving and not blocked_for_good(t)])

    def check_threads(method: str, thorough: bool) -> None:
        for name, which in timers:
            if getitimer(which)[0] > 0:
                report("timer", f"a signal timer ({name}) still armed after {method} "
                       "returned")  # fmt: skip
        count = os_threads if thorough or method == "load" else python_threads
        if count() <= 0 or acting() <= 0:
            return
        deadline = monotonic() + THREAD_GRACE_S
        while monotonic() < deadline:
            sleep(0.002)
            if count() <= 0 or acting() <= 0:
                return
        running = acting()
        if running > 0:
            report("thread", f"{running} thread(s) still running after {method} returned "
                   "(running, sleeping or waiting with a timeout)")  # fmt: skip

    return check_threads
