"""The shifted wall clock (``Sandbox.load(clock_offset_s=...)``) reaches every way
environment code reads the date: ``time``, ``clock_gettime``, ``datetime`` (also bound as
a default argument or a class attribute), and SQLite's ``'now'``; durations stay true."""

from __future__ import annotations

import ast

from spade.sandbox import Sandbox

DAY = 86_400
SOURCE = '''
from spade.envs import TextEnv
import time, sqlite3, datetime
from datetime import datetime as DT


def stamp(now=DT.now, clock=time.clock_gettime):
    return now().toordinal(), int(clock(time.CLOCK_REALTIME) // 86400)


class ClockEnv(TextEnv):
    NOW = DT.now

    def reset(self, seed=None, options=None, *, today=datetime.date.today):
        db = sqlite3.connect(':memory:')
        db.execute('CREATE TABLE t(a, b DEFAULT CURRENT_TIMESTAMP)')
        db.execute('INSERT INTO t(a) VALUES (1)')
        days = db.execute(
            "SELECT julianday('now'), julianday(CURRENT_DATE), julianday((SELECT b FROM t)),"
            " unixepoch() / 86400, julianday(strftime('%Y-%m-%d', 'now'))").fetchone()
        seen = {
            "time": int(time.time() // 86400),
            "ns": time.clock_gettime_ns(time.CLOCK_REALTIME) // 86400 // 10**9,
            "bound": stamp(),
            "class": self.NOW().toordinal(),
            "kwdefault": today().toordinal(),
            "module": datetime.datetime.now().toordinal(),
            "sqlite": [int(d) for d in days],
            "monotonic": time.monotonic() < 10**8,
        }
        return repr(seen), {}

    def step(self, action):
        return 'x', 0.0, True, False, {}
'''


def observe(sandbox: Sandbox, offset_s: float) -> dict:
    with sandbox.load(SOURCE, clock_offset_s=offset_s) as env:
        return ast.literal_eval(env.reset(seed=0)[0])


def test_every_wall_clock_moves_by_the_offset(sandbox: Sandbox) -> None:
    real, moved = observe(sandbox, 0.0), observe(sandbox, 400.0 * DAY)
    for key in ("time", "ns", "class", "kwdefault", "module"):
        assert moved[key] - real[key] in (400, 401), (key, real[key], moved[key])
    assert [b - a for a, b in zip(real["bound"], moved["bound"], strict=True)] in (
        [400, 400], [401, 401])  # fmt: skip
    assert all(b - a in (400, 401) for a, b in zip(real["sqlite"], moved["sqlite"], strict=True)), (
        real["sqlite"], moved["sqlite"])  # fmt: skip
    assert real["monotonic"] and moved["monotonic"]


LATENCY = '''
from spade.envs import TextEnv
import time
from time import monotonic, perf_counter_ns
from datetime import datetime as DT

CLOCKS = {
    "monotonic": monotonic,
    "perf_ns": lambda: perf_counter_ns() / 1e9,
    "time": time.time,
    "boottime": lambda: time.clock_gettime(time.CLOCK_BOOTTIME),
    "mono_raw_ns": lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW) / 1e9,
    "datetime": lambda: DT.now().timestamp(),
    "process": time.process_time,
}


class PatienceEnv(TextEnv):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.marks = {k: f() for k, f in CLOCKS.items()}
        within = monotonic()
        time.sleep(0.01)
        return repr(monotonic() - within), {}

    def step(self, action):
        return repr({k: f() - self.marks[k] for k, f in CLOCKS.items()}), 0.0, True, False, {}
'''


def test_a_clock_gap_moves_every_clock_between_calls_and_none_within(sandbox: Sandbox) -> None:
    """With ``clock_gap_s`` each call arrives as if the caller had thought that long: the
    time between ``reset`` and ``step`` reads as the gap on every clock but CPU time, while
    a duration measured inside one call stays true."""
    seen = {}
    for gap in (0.0, 30.0):
        with sandbox.load(LATENCY, clock_offset_s=DAY if gap else 0.0, clock_gap_s=gap) as env:
            within = float(env.reset(seed=0)[0])
            seen[gap] = ast.literal_eval(env.step("x")[0])
        assert 0.005 < within < 30.0, within  # no gap inside one call
    # bounds at the gap, not at what a loaded host takes: real time adds under 30 s, the
    # gap adds 30 s once (twice would be 60)
    for clock, elapsed in seen[0.0].items():
        assert 0.0 <= elapsed < 30.0, (clock, elapsed)
    for clock, elapsed in seen[30.0].items():
        if clock == "process":
            assert elapsed < 30.0, elapsed
        else:
            assert 30.0 <= elapsed < 60.0, (clock, elapsed)


def test_with_a_clock_gap_the_callers_own_latency_does_not_count(sandbox: Sandbox) -> None:
    """Each call arrives exactly the gap after the previous one returned, however long the
    caller really took: a caller that waits 3 s between ``reset`` and ``step`` is seen to
    answer 30 s later on every clock but CPU time (as a back-to-back one is), so a gate on
    latency opens alike for a slow model and for the validator."""
    import time

    with sandbox.load(LATENCY, clock_gap_s=30.0) as env:
        env.reset(seed=0)
        time.sleep(3.0)
        seen = ast.literal_eval(env.step("x")[0])
    for clock, elapsed in seen.items():
        if clock != "process":
            # 30 s plus the time inside the two calls; the 3 s wait would make it 33 or more
            assert 30.0 <= elapsed < 33.0, (clock, elapsed)
