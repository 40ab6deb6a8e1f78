"""The parent's proxy to one environment instance living in its own worker process.

Every call is one request frame and one reply frame, under a wall-clock deadline. Nothing
the worker sends is trusted: frames are size-capped JSON, every field is re-checked, a
reply must echo the request's random nonce, and the verdict on violations is made here
from the reports, never taken from the worker.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import signal
import time
from typing import Any

from spade.sandbox import _wire
from spade.sandbox._seccomp import SECCOMP_KILL_REASON
from spade.sandbox._server import ForkServer
from spade.sandbox._types import (
    EnvFault,
    EnvInfo,
    FaultKind,
    SandboxError,
    SandboxLimits,
    Violation,
)

_WORKER_KINDS = {"exception": FaultKind.EXCEPTION, "load": FaultKind.LOAD,
                 "protocol": FaultKind.PROTOCOL}  # fmt: skip
_METHODS = frozenset({"check", "render", "close"})


class EnvHandle:
    """Proxy with the environment's ``reset``/``step``/tool interface; see the module doc."""

    info: EnvInfo

    def __init__(self, server: ForkServer, limits: SandboxLimits) -> None:
        self._server, self._limits = server, limits
        self._pid_holder, self._req, self._rep = server.spawn()
        self._reader = _wire.FrameReader(self._rep, limits.max_response_bytes)
        self._violations: list[Violation] = []
        self._claimed = 0  # violations the worker says it recorded
        self._out: list[str] = []
        self._out_len, self._dropped = 0, 0
        self._dead: tuple[FaultKind, str] | None = None
        # Unpredictable to the worker, cheap per call (the worker never sees this state).
        self._nonces = random.Random(secrets.token_bytes(16))

    # -- the environment interface ---------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return self._call("reset", [seed, options], self._limits.call_timeout_s)

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

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Forbidden attempts recorded so far (late reports are collected first)."""
        self._drain()
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
        """Kill and reap the worker (idempotent)."""
        if self._dead is not None:
            return
        self._drain()
        self._dead = (FaultKind.PROTOCOL, "the handle was closed")
        self._server.finish(self._pid)
        self._close_fds()

    def __enter__(self) -> EnvHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------
    @property
    def _pid(self) -> int:
        if self._pid_holder[0] is None:
            try:
                self._server.settle()
            except SandboxError:
                return -1  # the server is gone, and its workers with it
        pid = self._pid_holder[0]
        return -1 if pid is None else pid

    def _load(self, source: str, filename: str) -> None:
        raw = self._call("load", [source, filename], self._limits.load_timeout_s)
        self.info = _parse_info(raw)

    def _call(self, method: str, args: list[Any], timeout: float) -> Any:
        if self._dead is not None:
            kind, why = self._dead
            kind = FaultKind.PROTOCOL if kind == FaultKind.PROTOCOL else FaultKind.CRASH
            raise self._fault(kind, f"worker is gone ({why})", self._count())
        before = self._count()
        nonce = self._nonces.getrandbits(62) | 1  # 0 marks a worker's dying report
        deadline = time.monotonic() + timeout
        try:
            frame = _wire.encode_frame({"n": nonce, "m": method, "a": _wire.to_wire(args)})
        except _wire.WireError as exc:
            raise ValueError(str(exc)) from None
        try:
            _wire.write_all(self._req, frame, deadline)
            while True:
                reply = self._absorb(self._reader.read(deadline))
                if reply is not None:
                    break
            if reply.get("n") == 0 and not reply["ok"]:
                kind_name, message = reply["e"]
                self._kill((FaultKind.PROTOCOL, message))
                raise self._fault(FaultKind.PROTOCOL, message, before)
            if reply.get("n") != nonce:
                raise _wire.WireError("reply does not answer the current request")
            if reply["ok"]:
                value = _wire.from_wire(reply.get("r"))
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
        if not reply["ok"]:
            kind_name, message = reply["e"]
            kind = _WORKER_KINDS.get(kind_name, FaultKind.PROTOCOL)
            raise self._fault(kind, message, before)
        if self._count() > before:
            raise self._fault(FaultKind.VIOLATION, "", before)
        return value

    def _absorb(self, body: bytes) -> dict[str, Any] | None:
        """Record what a frame reports; return it if it is a reply, None if a report."""
        message = _wire.decode_body(body)
        if type(message) is not dict:
            raise _wire.WireError("a frame that is not an object")
        records, total = message.get("v", []), message.get("V", 0)
        if type(records) is not list or type(total) is not int:
            raise _wire.WireError("malformed violation report")
        for item in records:
            if (type(item) is not list or len(item) != 2
                    or not all(type(x) is str for x in item)):  # fmt: skip
                raise _wire.WireError("malformed violation report")
            self._violations.append(Violation(item[0][:40], item[1][:300]))
        self._claimed = max(self._claimed, total - len(self._violations), 0)
        out = message.get("o")
        if out is not None:
            dropped = message.get("d")
            if type(out) is not str or type(dropped) is not int:
                raise _wire.WireError("malformed output report")
            room = max(self._limits.max_output_bytes - self._out_len, 0)
            self._out.append(out[:room])
            self._out_len += min(len(out), room)
            self._dropped = max(self._dropped + len(out) - min(len(out), room), dropped)
        if message.get("t") == "v":
            return None
        if type(message.get("ok")) is not bool or type(message.get("n")) is not int:
            raise _wire.WireError("malformed reply")
        if not message["ok"]:
            err = message.get("e")
            if type(err) is not list or len(err) != 2 or not all(type(x) is str for x in err):
                raise _wire.WireError("malformed error reply")
        return message

    def _drain(self) -> None:
        """Collect reports written after the last reply (never blocks)."""
        if self._dead is not None:
            return
        try:
            while True:
                if self._absorb(self._reader.read(None)) is not None:
                    raise _wire.WireError("an unsolicited reply")
        except _wire.ReadTimeout:
            return
        except _wire.ChannelClosed:
            self._death()
        except _wire.WireError as exc:
            self._kill((FaultKind.PROTOCOL, str(exc)))

    def _death(self) -> tuple[FaultKind, str]:
        """The worker closed its channel: find out how it ended and mark the handle dead."""
        result = self._server.finish(self._pid, wait_s=0.5)
        status = result.get("status")
        if result.get("killed") or status is None:
            verdict = (FaultKind.PROTOCOL, "the worker closed its control channel")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            verdict = (FaultKind.CRASH, _signal_text(sig, self._limits))
            if sig == signal.SIGSYS:
                self._violations.append(Violation("seccomp", SECCOMP_KILL_REASON))
                verdict = (FaultKind.VIOLATION, f"worker {SECCOMP_KILL_REASON}")
        else:
            code = os.WEXITSTATUS(status)
            verdict = (FaultKind.CRASH, f"worker exited with code {code} (the environment "
                       f"called os._exit({code}) or the interpreter failed)")  # fmt: skip
        self._dead = verdict
        self._close_fds()
        return verdict

    def _kill(self, why: tuple[FaultKind, str]) -> None:
        if self._dead is None:
            self._dead = why
            self._server.finish(self._pid)
            self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._req, self._rep):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._req = self._rep = -1

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
