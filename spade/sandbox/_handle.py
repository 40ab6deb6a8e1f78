"""The parent's proxy to one environment instance living in its own worker process.

Every call is one request frame and one reply frame, under a wall-clock deadline. Nothing
the worker sends is trusted: frames are size-capped JSON, every field is re-checked, a
reply must echo the request's random nonce, and the verdict on violations is made here
from the reports, never taken from the worker.

Threads: calls on one handle are serialised; :meth:`EnvHandle.close` may come from any
thread at any time. A close during a call kills the worker first (through the fork
server); the call wakes on the closed pipe and fails promptly with an :class:`EnvFault`,
and whichever side finishes last closes the pipes, so no fd is closed under a thread that
is still polling it.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import signal
import threading
import time
from typing import Any

from spade.sandbox import _wire
from spade.sandbox._seccomp import seccomp_reason
from spade.sandbox._server import ForkServer
from spade.sandbox._types import EnvFault, EnvInfo, FaultKind, SandboxLimits, Violation

_WORKER_KINDS = {"exception": FaultKind.EXCEPTION, "load": FaultKind.LOAD,
                 "protocol": FaultKind.PROTOCOL}  # fmt: skip
_METHODS = frozenset({"check", "render", "close"})
_CLOSED = (FaultKind.PROTOCOL, "the handle was closed")
_SCALARS = _wire.SCALARS
_IS_SCALAR = _SCALARS.__contains__
#: Seconds to wait for a worker that closed its channel to finish dying (exit status).
DEATH_WAIT_S = 0.5


class EnvHandle:
    """Proxy with the environment's ``reset``/``step``/tool interface; see the module doc."""

    info: EnvInfo

    def __init__(self, server: ForkServer, limits: SandboxLimits) -> None:
        self._server, self._limits = server, limits
        self._wid, req, rep = server.spawn()
        self._chan = _wire.Channel(req, rep, limits.max_response_bytes + _wire.TAG_BYTES,
                                   limits.spin_us)
        # The frame key: only the worker's audit hook holds it, so a frame written by
        # anything else in the worker (raw fd access, a forged reply) fails the check.
        key = secrets.token_bytes(_wire.KEY_BYTES)
        self._open_frame = _wire.make_opener(key)  # each tag covers its sequence number
        self._chan.send(_wire.HEADER.pack(len(key)) + key, time.monotonic() + 5)
        self._open = True  # the pipes are not closed yet
        self._violations: list[Violation] = []
        self._claimed = 0  # violations the worker says it recorded beyond those listed
        self._total = 0  # the highest violation count the worker has reported
        self._out: list[str] = []
        self._out_len, self._dropped = 0, 0
        self._dead: tuple[FaultKind, str] | None = None
        self._busy = False  # a thread is using the channel (guarded by _mutex)
        self._mutex = threading.Lock()
        self._calls = threading.Lock()  # serialises calls
        # Unpredictable to the worker, cheap per call (the worker never sees this state).
        self._nonces = random.Random(secrets.token_bytes(16))
        self._lost = False  # the fork server went away (infrastructure, not the env)

    # -- the environment interface ---------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        limit = self._limits.reset_timeout_s
        timeout = 2 * self._limits.call_timeout_s if limit is None else limit
        return self._call("reset", [seed, options], timeout)

    def step(self, action: str) -> Any:
        return self._call("step", [action], self._limits.call_timeout_s)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._call("call_tool", [name, arguments], self._limits.call_timeout_s)

    def solution(self) -> Any:
        return self._call("solution", [], self._limits.call_timeout_s)

    def call(self, method: str, *args: Any) -> Any:
        """Call one of the whitelisted extra methods (``check``, ``render``, ``close``)."""
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not callable through the sandbox")
        return self._call(method, list(args), self._limits.call_timeout_s)

    def finalize(self, timeout_s: float = 0.5) -> tuple[Violation, ...]:
        """Tear the environment down inside the worker and return every violation.

        Call it before :meth:`close` when the verdict matters: dormant attempts wait for
        teardown (a ``__del__`` that connects out, an ``atexit`` callback that runs a
        command, a thread that acts later). The worker drops the environment, collects
        garbage, runs the ``atexit`` callbacks and gives live threads up to ``timeout_s``
        to finish, then answers. Never raises :class:`EnvFault`: a fault during teardown
        (timeout, crash) leaves the handle dead, and what was recorded is still returned.
        The environment is gone afterwards; only :meth:`close` remains useful.
        """
        try:
            budget = float(timeout_s)
            self._call("finalize", [budget], budget + self._limits.call_timeout_s)
        except EnvFault:
            pass
        return self.violations

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Forbidden attempts recorded so far.

        Late reports are collected first, unless a call is running in another thread
        (that call collects them).
        """
        if self._calls.acquire(blocking=False):
            try:
                if self._enter():
                    try:
                        self._drain()
                    finally:
                        self._leave()
            finally:
                self._calls.release()
        return self._all_violations()

    @property
    def output(self) -> str:
        """Captured stdout/stderr, capped at ``limits.max_output_bytes``."""
        text = "".join(self._out)
        if self._dropped:
            text += f"\n[... {self._dropped} more characters of output dropped]"
        return text

    @property
    def alive(self) -> bool:
        return self._dead is None

    def close(self) -> None:
        """Kill the worker (idempotent, cheap, safe from any thread).

        The fork server reaps the worker in the background. A call running in another
        thread fails promptly with an :class:`EnvFault`.
        """
        while True:
            if self._calls.acquire(blocking=False):
                try:
                    if self._enter():
                        try:
                            self._drain()  # late reports first
                            self._mark(_CLOSED)
                        finally:
                            self._leave()
                finally:
                    self._calls.release()
                return
            with self._mutex:
                if self._dead is not None:
                    return
                if self._busy:  # a call is in flight: it closes the channel when it wakes
                    self._dead = _CLOSED
                    break
            time.sleep(0)  # a call is just starting or ending
        self._server.kill(self._wid)

    def __enter__(self) -> EnvHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------
    def _enter(self) -> bool:
        """Claim the channel (the caller holds ``_calls``); False if the handle is dead."""
        with self._mutex:
            if self._dead is not None:
                return False
            self._busy = True
            return True

    def _leave(self) -> None:
        """Release the channel; the last user of a dead handle kills and closes."""
        with self._mutex:
            self._busy = False
            dead = self._dead is not None and self._open
        if dead:
            self._open = False
            self._server.kill(self._wid)
            self._chan.close()

    def _mark(self, why: tuple[FaultKind, str]) -> None:
        with self._mutex:
            if self._dead is None:
                self._dead = why

    def _load(
        self, source: str, filename: str, clock_offset_s: float = 0.0, clock_gap_s: float = 0.0
    ) -> None:
        raw = self._call("load", [source, filename, clock_offset_s, clock_gap_s],
                         self._limits.load_timeout_s)  # fmt: skip
        self.info = _parse_info(raw)

    def _call(self, method: str, args: list[Any], timeout: float) -> Any:
        with self._calls:
            if not self._enter():
                assert self._dead is not None
                kind, why = self._dead
                kind = FaultKind.PROTOCOL if kind == FaultKind.PROTOCOL else FaultKind.CRASH
                raise self._fault(kind, f"worker is gone ({why})", self._count())
            try:
                return self._round_trip(method, args, timeout)
            finally:
                self._leave()

    def _round_trip(self, method: str, args: list[Any], timeout: float) -> Any:
        before = self._count()
        nonce = self._nonces.getrandbits(62) | 1  # 0 marks a worker's dying report
        deadline = time.monotonic() + timeout
        if not all(map(_IS_SCALAR, map(type, args))):
            try:
                args = _wire.to_wire(args)
            except _wire.WireError as exc:
                raise ValueError(str(exc)) from None
        body = _wire.encode([nonce, method, args]).encode("utf-8", "surrogatepass")
        frame = _wire.HEADER.pack(len(body)) + body
        chan = self._chan
        try:
            chan.send(frame, deadline)
            while True:
                reply = self._absorb(chan.read(deadline))
                if reply is not None:
                    break
            kind, got, payload = reply[0], reply[1], reply[2]
            if got == 0 and kind == "e":
                message = payload[1]
                self._kill((FaultKind.PROTOCOL, message))
                raise self._fault(FaultKind.PROTOCOL, message, before)
            if got != nonce:
                raise _wire.WireError("reply does not answer the current request")
            if kind == "r":
                value = payload if type(payload) in _SCALARS else _wire.from_wire(payload)
        except _wire.ReadTimeout:
            self._kill((FaultKind.TIMEOUT, f"{method} timed out"))
            raise self._fault(
                FaultKind.TIMEOUT,
                f"{method} exceeded the {timeout:g} s wall-clock limit; the worker was killed",
                before,
            ) from None
        except _wire.ChannelClosed:
            kind, message = self._death()
            raise self._fault(kind, message, before) from None
        except _wire.WireError as exc:
            self._kill((FaultKind.PROTOCOL, str(exc)))
            raise self._fault(FaultKind.PROTOCOL, str(exc), before) from None
        if kind != "r":
            worker_kind, message = payload
            fault_kind = _WORKER_KINDS.get(worker_kind, FaultKind.PROTOCOL)
            if fault_kind == FaultKind.PROTOCOL:
                self._kill((fault_kind, message))
            raise self._fault(fault_kind, message, before)
        if len(self._violations) + self._claimed > before:
            if self._claimed:
                self._drain()  # reports already in the pipe name what the count claims
            raise self._fault(FaultKind.VIOLATION, "", before)
        return value

    def _absorb(self, body: bytes) -> list[Any] | None:
        """Record what a frame reports; return it if it is a reply, None if a report.

        A frame is ``[kind, nonce, payload, total violations, new violations, output]``
        with kind ``r`` (reply), ``e`` (error reply) or ``v`` (violation report).
        """
        message, suspect = _wire.decode_reply(self._open_frame(body))
        if type(message) is not list or len(message) != 6:
            raise _wire.WireError("a frame that is not a 6-item list")
        if suspect:  # text that is not valid UTF-8 or a huge integer somewhere in it
            _wire.check_value(message[2])  # the environment's own value: a fault
            message[4], message[5] = _wire.scrubbed(message[4]), _wire.scrubbed(message[5])
            _wire.check_value(message[:2] + message[3:], "a report")
        kind, nonce, payload, total, records, out = message
        if type(records) is not list or type(total) is not int:
            raise _wire.WireError("malformed violation report")
        for item in records:
            if (type(item) is not list or len(item) != 2
                    or not all(type(x) is str for x in item)):  # fmt: skip
                raise _wire.WireError("malformed violation report")
            self._violations.append(Violation(item[0][:40], item[1][:300]))
        self._total = max(self._total, total)
        # Recounted each time: a record that arrives after a count it belongs to replaces
        # the unnamed part of that count instead of adding to it.
        self._claimed = max(self._total - len(self._violations), 0)
        if out is not None:
            if (type(out) is not list or len(out) != 2 or type(out[0]) is not str
                    or type(out[1]) is not int):  # fmt: skip
                raise _wire.WireError("malformed output report")
            text, dropped = out
            room = max(self._limits.max_output_bytes - self._out_len, 0)
            self._out.append(text[:room])
            self._out_len += min(len(text), room)
            self._dropped = max(self._dropped + len(text) - min(len(text), room), dropped)
        if kind == "v":
            return None
        if type(nonce) is not int:
            raise _wire.WireError("malformed reply")
        if kind == "r":
            return message
        if kind == "e" and type(payload) is list and len(payload) == 2 and all(
            type(x) is str for x in payload
        ):
            return message
        raise _wire.WireError("malformed reply")

    def _drain(self) -> None:
        """Collect reports written after the last reply (never blocks; channel claimed)."""
        try:
            while True:
                if self._absorb(self._chan.read(None)) is not None:
                    raise _wire.WireError("an unsolicited reply")
        except _wire.ReadTimeout:
            return
        except _wire.ChannelClosed:
            self._death()
        except _wire.WireError as exc:
            self._kill((FaultKind.PROTOCOL, str(exc)))

    def _death(self) -> tuple[FaultKind, str]:
        """The worker closed its channel: find out how it ended and mark the handle dead."""
        if self._dead is not None:  # closed from another thread while we waited
            return self._dead
        result = self._server.reap(self._wid, DEATH_WAIT_S)
        status = result.get("status")
        if result.get("server_lost"):
            self._lost = True
            verdict = (FaultKind.PROTOCOL, "the fork server was lost (the worker went with it)")
        elif result.get("killed") or status is None:
            verdict = (FaultKind.PROTOCOL, "the worker closed its control channel")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            verdict = (FaultKind.CRASH, _signal_text(sig, self._limits))
            if sig == signal.SIGSYS:
                reason = seccomp_reason(result.get("refused"))
                self._violations.append(Violation("seccomp", reason))
                verdict = (FaultKind.VIOLATION, f"worker {reason}")
        else:
            code = os.WEXITSTATUS(status)
            verdict = (FaultKind.CRASH, f"worker exited with code {code} (the environment "
                       f"called os._exit({code}) or the interpreter failed)")  # fmt: skip
        self._mark(verdict)
        return self._dead or verdict

    def _kill(self, why: tuple[FaultKind, str]) -> None:
        """Mark the handle dead; the worker is killed when the channel is released."""
        self._mark(why)

    @property
    def server_lost(self) -> bool:
        """Whether the handle died because its fork server went away (infrastructure)."""
        return self._lost

    def _all_violations(self) -> tuple[Violation, ...]:
        extra: tuple[Violation, ...] = ()
        if self._claimed:
            extra = (Violation("unlisted", f"{self._claimed} more forbidden attempt(s)"),)
        return (*self._violations, *extra)

    def _count(self) -> int:
        return len(self._violations) + self._claimed

    def _fault(self, kind: FaultKind, message: str, before: int) -> EnvFault:
        violations = self._all_violations()
        if (self._count() > before or kind == FaultKind.VIOLATION) and violations:
            first = violations[min(before, len(violations) - 1)]
            outcome = f" (then: {kind.value}: {message})" if message and kind != "violation" else ""
            message, kind = f"{first}{outcome}", FaultKind.VIOLATION
        return EnvFault(kind, message, violations, self.output)


def _signal_text(sig: int, limits: SandboxLimits) -> str:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    extra = {
        signal.SIGSEGV: " (segmentation fault: deep recursion or native code)",
        signal.SIGXCPU: f" (CPU time limit of {limits.cpu_s} s exceeded)",
        signal.SIGKILL: " (killed: out of memory or a hard limit)",
        signal.SIGABRT: " (the interpreter aborted)",
        signal.SIGBUS: " (bus error in native code)",
    }.get(signal.Signals(sig) if sig in signal.valid_signals() else signal.SIGSYS, "")
    return f"worker killed by {name}{extra}"


def _parse_info(raw: Any) -> EnvInfo:
    """Check the worker's description of the class instead of trusting it."""

    def bad(why: str) -> EnvFault:
        return EnvFault(FaultKind.LOAD, f"environment class facts are invalid: {why}")

    if type(raw) is not dict:
        raise bad("not a mapping")
    name, kind, turns = raw.get("class_name"), raw.get("kind"), raw.get("max_turns")
    threshold, tools = raw.get("success_threshold"), raw.get("tools")
    if type(name) is not str or kind not in ("game", "tool"):
        raise bad("class name or kind")
    if type(turns) is not int or turns < 1:
        raise bad(f"max_turns must be a positive int, got {turns!r}"[:200])
    if not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise bad(f"success_threshold must be a finite number, got {threshold!r}"[:200])
    if type(raw.get("has_solution")) is not bool:
        raise bad("has_solution")
    if type(tools) is not list or not all(type(t) is dict for t in tools):
        raise bad("tool schemas must be a list of objects")
    return EnvInfo(name, kind, turns, float(threshold), raw["has_solution"], tools)
