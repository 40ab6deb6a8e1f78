"""Threads and signal timers a call leaves acting: judged by their state, never by who
started them. A thread blocked for good (an idle pool, a consumer on an empty queue) is
fine wherever it came from; one that sleeps, waits with a timeout or runs will act
between calls (a ``sched`` or ``Timer`` thread that opens a password after a while) and
is a named violation, even when a library function is its target and it was started
while the module was imported."""

from __future__ import annotations

import contextlib

import pytest
from _sandbox_envs import env_source

from spade.sandbox import EnvFault, Sandbox

SCHED = """
import sched, threading, time
S = sched.scheduler(time.monotonic, time.sleep)
OPEN = []
S.enter(30, 1, OPEN.append, (1,))
threading.Thread(target=S.run, daemon=True).start()
"""
POOL = """
from concurrent.futures import ThreadPoolExecutor
import time
POOL = ThreadPoolExecutor(max_workers=1)
POOL.submit(abs, -1).result()
OPEN = []
def later():
    time.sleep(30)
    OPEN.append(1)
"""

HOSTILE = {
    "sched-at-import": (SCHED, "", "still running after load"),
    "sched-in-reset": ("import sched, threading, time\nOPEN = []",
                       "s = sched.scheduler(time.monotonic, time.sleep)\n"
                       "s.enter(30, 1, OPEN.append, (1,))\n"
                       "threading.Thread(target=s.run, daemon=True).start()",
                       "still running after reset"),
    "timer-at-import": ("import threading\nOPEN = []\n"
                        "threading.Timer(30, OPEN.append, (1,)).start()", "",
                        "still running after load"),
    "event-wait-timeout": ("import threading\nE = threading.Event()\n"
                           "threading.Thread(target=E.wait, args=(30,), daemon=True).start()",
                           "", "still running after load"),
    "sleeper-in-idle-pool": (POOL, "POOL.submit(later)", "still running after reset"),
    "raw-thread-at-import": ("import _thread, time\n_thread.start_new_thread(time.sleep, (30,))",
                             "", "still running after load"),
    "alarm-left-armed": ("import signal\nOPEN = []\n"
                         "signal.signal(signal.SIGALRM, lambda *a: OPEN.append(1))",
                         "signal.setitimer(signal.ITIMER_REAL, 30.0)",
                         "signal timer (ITIMER_REAL) still armed after reset"),
}  # fmt: skip


@pytest.mark.parametrize(("module", "reset", "needle"), HOSTILE.values(), ids=list(HOSTILE))
def test_a_thread_or_timer_that_will_act_later_is_named(
    sandbox: Sandbox, module: str, reset: str, needle: str
) -> None:
    found: tuple = ()
    try:
        with sandbox.load(env_source(module=module, reset=reset)) as env:
            with contextlib.suppress(EnvFault):
                env.reset(seed=0)
            found = env.finalize()
    except EnvFault as fault:  # named at load
        found = fault.violations
    assert any(v.category == "resource" and needle in v.detail for v in found), found


VALID = {
    "idle-pool-at-import": (POOL, "assert POOL.submit(abs, -3).result() == 3"),
    "consumer-on-a-queue": (
        "import queue, threading\nJOBS, DONE = queue.Queue(), queue.Queue()\n"
        "def serve():\n    while True:\n        DONE.put(JOBS.get() * 2)\n"
        "threading.Thread(target=serve, daemon=True).start()",
        "JOBS.put(21)\nassert DONE.get(timeout=5) == 42",
    ),
    "event-wait-forever": ("import threading\nE = threading.Event()\n"
                           "threading.Thread(target=E.wait, daemon=True).start()", ""),
    "alarm-guard-cancelled": ("import signal", "signal.setitimer(signal.ITIMER_REAL, 5.0)\n"
                              "signal.setitimer(signal.ITIMER_REAL, 0)"),
}  # fmt: skip


@pytest.mark.parametrize(("module", "reset"), VALID.values(), ids=list(VALID))
def test_a_thread_blocked_for_good_is_fine(sandbox: Sandbox, module: str, reset: str) -> None:
    with sandbox.load(env_source(module=module, reset=reset)) as env:
        env.reset(seed=0)
        env.step("x")
        env.reset(seed=1)
        assert env.violations == ()
