"""Environment instances for a cycle's plays: reused between episodes, and timed.

Starting a sandbox worker costs milliseconds; a step costs microseconds. So a finished
episode hands its instance back and the next episode of the same environment resets it
(``reset`` builds a fresh instance state by contract; the validator checked that the same
seed gives the same episode). A faulted instance is closed, never reused. The pool also
measures the time spent inside environment calls (``env_steps_s``) and loading
instances (``env_load_s``).

With ``answer_delays`` each instance's clocks see every call arrive a delay after the
previous one returned, drawn per instance log-uniformly from that range, whatever the
agent really took (see :func:`spade.sandbox.Sandbox.load`'s ``clock_gap_s``): the
validator's hint audit answers with delays drawn from the same ranges, so a password
gated on the answer's latency opens for it at least as often as in training.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from spade.sandbox import EnvFault, EnvHandle, EnvInfo, Sandbox


class TimedHandle:
    """An :class:`EnvHandle` whose calls add their wall time to the owning pool."""

    def __init__(self, inner: EnvHandle, pool: HandlePool) -> None:
        self.inner = inner
        self._pool = pool

    @property
    def info(self) -> EnvInfo:
        return self.inner.info

    @property
    def alive(self) -> bool:
        return self.inner.alive

    def _timed(self, fn: Any, *args: Any, step: bool = False, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self._pool.count(time.perf_counter() - began, step)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return self._timed(self.inner.reset, seed=seed, options=options)

    def step(self, action: str) -> Any:
        return self._timed(self.inner.step, action, step=True)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._timed(self.inner.call_tool, name, arguments, step=True)

    def solution(self) -> Any:
        return self._timed(self.inner.solution)

    def close(self) -> None:
        with contextlib.suppress(EnvFault):
            self.inner.close()


class HandlePool:
    """An ``EnvProvider`` (see :mod:`spade.episodes`) over environments' sources by id: a
    mapping, or a callable (a problem source's) asked once per id on first use."""

    def __init__(self, sandbox: Sandbox,
                 sources: Mapping[str, str] | Callable[[str], str], *,
                 answer_delays: tuple[float, float] | None = None, seed: int = 0) -> None:
        self._sandbox = sandbox
        self._delays = answer_delays
        self._rng = random.Random(seed)
        self._lookup: Callable[[str], str] | None = None
        self._sources: dict[str, str] = {}
        if callable(sources):
            self._lookup = sources
        else:
            self._sources = dict(sources)
        self._idle: dict[str, list[TimedHandle]] = {}
        self._info: dict[str, EnvInfo] = {}
        self._lock = threading.Lock()  # the episode runner may call environments in threads
        self.env_seconds = 0.0  # inside reset/step/tool calls, summed (calls may overlap)
        self.load_seconds = 0.0  # starting workers and loading sources
        self.env_steps = 0
        self.loads = 0

    def count(self, seconds: float, step: bool) -> None:
        with self._lock:
            self.env_seconds += seconds
            self.env_steps += int(step)

    def acquire(self, env_id: str) -> EnvHandle:
        """An instance of ``env_id`` (a :class:`TimedHandle` standing in for an EnvHandle)."""
        idle = self._idle.get(env_id)
        if idle:
            return cast(EnvHandle, idle.pop())
        if self._lookup is not None and env_id not in self._sources:
            self._sources[env_id] = self._lookup(env_id)
        began = time.perf_counter()
        try:
            handle = TimedHandle(
                # the sandbox's one neutral file name, as in validation: an environment
                # must not tell a training instance from a validated one by __file__
                self._sandbox.load(self._sources[env_id], clock_gap_s=self._gap()), self
            )
        finally:
            self.load_seconds += time.perf_counter() - began
        self.loads += 1
        self._info.setdefault(env_id, handle.info)
        return cast(EnvHandle, handle)

    def _gap(self) -> float:
        if self._delays is None:
            return 0.0
        low, high = self._delays
        with self._lock:
            return math.exp(self._rng.uniform(math.log(low), math.log(high)))

    def release(self, env_id: str, handle: EnvHandle, *, broken: bool) -> None:
        if not isinstance(handle, TimedHandle):
            raise TypeError("release() takes back only instances this pool handed out")
        if broken or not handle.alive:
            handle.close()
        else:
            self._idle.setdefault(env_id, []).append(handle)

    def info(self, env_id: str) -> EnvInfo | None:
        """Static facts of an environment once it was loaded."""
        return self._info.get(env_id)

    def close(self) -> None:
        """Close every idle instance (in-use ones belong to the episodes)."""
        for handles in self._idle.values():
            for handle in handles:
                handle.close()
        self._idle.clear()

    def __enter__(self) -> HandlePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
