"""The sandbox: fork servers per hash seed, and loading environments into workers."""

from __future__ import annotations

import queue
import shutil
import sys
import tempfile
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from spade.sandbox import _launch
from spade.sandbox._handle import EnvHandle
from spade.sandbox._server import ForkServer
from spade.sandbox._types import (
    EnvFault,
    FaultKind,
    Isolation,
    IsolationUnavailable,
    SandboxError,
    SandboxLimits,
)

T = TypeVar("T")
_WEAK_WARNING = (
    "spade.sandbox: isolation={level!r} runs untrusted environment code WITHOUT "
    "{missing}; use it only for code you trust (the default 'bwrap' is the safe level)"
)


class Sandbox:
    """Runs untrusted environment code, one worker process per environment instance.

    A context manager that owns one fork server per hash seed (started lazily) and every
    worker they fork. ``isolation="bwrap"`` (the default) fails closed with
    :class:`IsolationUnavailable` when bubblewrap or seccomp cannot work here; the weaker
    levels must be requested with ``allow_weak=True`` and warn loudly. ``preload`` names
    heavy libraries (from :data:`PRELOADABLE`) the fork servers import once, so a worker
    does not pay seconds per load for them; what a library does while being imported
    then happens in the trusted server, before any environment code exists.

    Threads: ``load`` and ``close`` may be called from any number of threads at once, and
    different handles may be used in parallel (each call on a handle is serialised;
    ``EnvHandle.close`` is safe from any thread). Fork servers are started by a
    long-lived launcher thread owned by the sandbox, because Linux ties bwrap's
    ``--die-with-parent`` to the *thread* that started it: a server started from a
    short-lived caller thread would die with that thread.
    """

    def __init__(
        self,
        isolation: Isolation | str = "bwrap",
        limits: SandboxLimits = SandboxLimits(),  # noqa: B008 - frozen dataclass
        *,
        allow_weak: bool = False,
        preload: tuple[str, ...] = (),
    ) -> None:
        try:
            self.isolation = Isolation(isolation)
        except ValueError:
            choices = ", ".join(i.value for i in Isolation)
            raise IsolationUnavailable(
                f"unknown isolation level {isolation!r} (choose one of {choices})"
            ) from None
        self.limits = limits
        unknown = sorted(set(preload) - _launch.PRELOADABLE)
        if unknown:
            raise ValueError(
                f"cannot preload {', '.join(unknown)}: only these libraries may be imported "
                f"by the fork server: {', '.join(sorted(_launch.PRELOADABLE))}"
            )
        self.preload = tuple(dict.fromkeys(preload))
        self._servers: dict[int, ForkServer] = {}
        self._handles: weakref.WeakSet[EnvHandle] = weakref.WeakSet()
        self._spares: dict[int, EnvHandle] = {}  # a started worker per hash seed
        self._lock = threading.RLock()
        self._launcher = _Launcher()
        self._closed = False
        self._warned = False
        self._tmp: str | None = None
        if self.isolation != Isolation.BWRAP:
            if not allow_weak:
                raise IsolationUnavailable(
                    f"isolation={self.isolation.value!r} is weaker than bwrap; pass "
                    "allow_weak=True to opt in explicitly"
                )
            missing = "namespaces or a private filesystem" if self.isolation == Isolation.RLIMITS \
                else "namespaces, seccomp or resource limits (audit hooks only)"
            message = _WEAK_WARNING.format(level=self.isolation.value, missing=missing)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            print(f"WARNING: {message}", file=sys.stderr)
            self._tmp = tempfile.mkdtemp(prefix="spade-sandbox-")
        if self.isolation == Isolation.BWRAP:
            _launch.probe_bwrap(_launch.find_bwrap(), limits)
        if self.isolation != Isolation.NONE:
            _launch.check_seccomp()
        self._finalizer = weakref.finalize(
            self, _cleanup, self._servers, self._tmp, self._launcher
        )

    @property
    def landlock(self) -> int:
        """The Landlock ABI the workers are confined with (0: the kernel has none, or the
        level is ``none``; filesystem access is then limited by bwrap's mounts and the
        audit hook only). Starts the fork server for hash seed 0 if none is running."""
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            return self._server(0).landlock

    def load(
        self, source: str, *, hash_seed: int = 0, filename: str = "<env>",
        clock_offset_s: float = 0.0, clock_gap_s: float = 0.0, restock: bool = True,
    ) -> EnvHandle:  # fmt: skip
        """Start a worker, import ``source`` in it and construct its environment class.

        ``filename``: the module's ``__file__`` and its code's file name. Every load of an
        environment (validation, training, replay) keeps the default, so that none of them
        can be told from another by it.
        ``clock_offset_s`` moves the wall clock the environment sees (the validator's
        second determinism worker uses it to expose date- and time-dependent instances);
        ``clock_gap_s`` moves every clock, durations included, that much further ahead as
        each call arrives (behaviour that depends on how fast the caller answers).
        ``restock=False``: the next spare worker for ``hash_seed`` is forked when the
        caller calls :meth:`restock`, not right after this load (a caller that knows when
        a CPU is free: making a worker costs about as much CPU as a hundred calls).

        Raises :class:`EnvFault` (LOAD, EXCEPTION, TIMEOUT, CRASH or VIOLATION) when the
        code does not load cleanly; the worker is then already gone.
        """
        if not isinstance(source, str):
            raise TypeError("source must be a str")
        if not isinstance(hash_seed, int) or not 0 <= hash_seed <= 4294967295:
            raise ValueError("hash_seed must be an int in [0, 4294967295]")
        for attempt in range(2):
            handle = self._take(hash_seed)
            try:
                handle._load(source, filename, float(clock_offset_s), float(clock_gap_s))
            except EnvFault as fault:
                handle.close()
                if handle.server_lost and attempt == 0:
                    continue  # infrastructure, not the environment: once more, new server
                if fault.kind == FaultKind.EXCEPTION:
                    fault.kind = FaultKind.LOAD
                raise
            except BaseException:
                handle.close()
                raise
            finally:
                if restock:
                    self._restock(hash_seed)
            return handle
        raise SandboxError(f"the fork server for hash seed {hash_seed} keeps dying")

    def _take(self, hash_seed: int) -> EnvHandle:
        """The spare worker for ``hash_seed``, or a new one."""
        stale: EnvHandle | None = None
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            server = self._server(hash_seed)
            handle = self._spares.pop(hash_seed, None)
            if handle is None or not handle.alive or handle._server is not server:
                stale, handle = handle, EnvHandle(server, self.limits)
                self._handles.add(handle)
        if stale is not None:
            stale.close()
        return handle

    def restock(self, hash_seed: int = 0) -> None:
        """Fork the spare worker for ``hash_seed`` now, unless there is one (or its fork
        server is not running): what a ``load(..., restock=False)`` left to the caller."""
        self._restock(hash_seed)

    def _restock(self, hash_seed: int) -> None:
        """Fork the next spare once a load is done (not during it: on a small machine the
        fork and the hardening would compete with the load for the CPU)."""
        with self._lock:
            server = self._servers.get(hash_seed)
            if self._closed or hash_seed in self._spares or server is None or not server.alive:
                return
            spare = EnvHandle(server, self.limits)
            self._spares[hash_seed] = spare
            self._handles.add(spare)

    def close(self) -> None:
        """Kill every worker and fork server; no process survives."""
        with self._lock:
            self._closed = True
            for handle in list(self._handles):
                handle.close()
            self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _server(self, hash_seed: int) -> ForkServer:
        server = self._servers.get(hash_seed)
        if server is None or not server.alive:
            if server is not None:
                server.close()
            server = ForkServer(
                self.isolation, hash_seed, self.limits, self._tmp, self._launcher.run,
                preload=self.preload,
            )
            self._servers[hash_seed] = server
            if not server.landlock and self.isolation != Isolation.NONE and not self._warned:
                self._warned = True
                message = ("spade.sandbox: Landlock is unavailable on this kernel; filesystem "
                           "access is limited by the namespace mounts and the audit hook only")
                warnings.warn(message, RuntimeWarning, stacklevel=3)
        return server


def _cleanup(servers: dict[Any, ForkServer], tmp: str | None, launcher: _Launcher) -> None:
    for server in list(servers.values()):
        server.close()
    servers.clear()
    launcher.stop()
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


class _Launcher:
    """A long-lived thread that starts the fork servers of one sandbox.

    ``PR_SET_PDEATHSIG`` (bwrap's ``--die-with-parent``) fires when the *thread* that
    forked the child exits, not the process. Starting every server from this thread makes
    a server live exactly as long as the sandbox (or the process), whichever thread asked
    for it. The thread starts on first use and holds no reference to the sandbox.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the launcher thread and return its result (or raise its error)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=_serve_launches, args=(self._queue,), name="spade-sandbox-launcher",
                    daemon=True,
                )  # fmt: skip
                self._thread.start()
            thread = self._thread
        if threading.current_thread() is thread:
            return fn()
        done = threading.Event()
        result: list[Any] = []
        self._queue.put((fn, result, done))
        done.wait()
        value, error = result
        if error is not None:
            raise error
        return cast(T, value)

    def stop(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread = None


def _serve_launches(jobs: queue.SimpleQueue[Any]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        fn, result, done = job
        try:
            result[:] = [fn(), None]
        except BaseException as exc:  # handed to the caller
            result[:] = [None, exc]
        finally:
            done.set()
