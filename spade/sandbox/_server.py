"""Parent side of one fork server: start it, ask it for workers, kill and reap them."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
from typing import Any

from spade.sandbox import _launch
from spade.sandbox._types import Isolation, IsolationUnavailable, SandboxError, SandboxLimits

#: Seconds a fork server may take to import the runtime.
START_TIMEOUT_S = 60.0
#: Seconds for one spawn/kill/reap exchange with a healthy fork server.
REQUEST_TIMEOUT_S = 10.0


class ForkServer:
    """One fork server process (inside its own bwrap for level ``bwrap``)."""

    def __init__(
        self, level: Isolation, hash_seed: int, limits: SandboxLimits, tmp_base: str | None
    ) -> None:
        self.level, self.hash_seed = level, hash_seed
        self._spawn_message = json.dumps({"op": "spawn", "limits": dataclasses.asdict(limits)})
        self._lock = threading.RLock()
        self._pending: collections.deque[list[int | None]] = collections.deque()
        self._sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        inner_tmp = "/tmp" if level == Isolation.BWRAP else str(tmp_base)
        argv = _launch.python_argv(child.fileno(), level.value, inner_tmp)
        if level == Isolation.BWRAP:
            argv = _launch.bwrap_argv(_launch.find_bwrap(), limits) + argv
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
        try:
            self.proc = subprocess.Popen(
                argv,
                env=_launch.scrubbed_env(hash_seed, inner_tmp),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                pass_fds=[child.fileno()],
                start_new_session=True,
                cwd="/",
            )
        finally:
            child.close()
        try:
            hello = self._receive(START_TIMEOUT_S)
        except SandboxError as exc:
            tail = self._stderr_tail()
            self.close()
            raise IsolationUnavailable(
                f"the {level.value} sandbox failed to start ({exc}{tail}): "
                f"{_launch.INSTALL_HINT}"
            ) from None
        if not hello.get("ok"):
            self.close()
            raise IsolationUnavailable(
                f"the {level.value} sandbox failed to start ({hello.get('error')}): "
                f"{_launch.INSTALL_HINT}"
            )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self._sock.fileno() >= 0

    def spawn(self) -> tuple[list[int | None], int, int]:
        """Ask for a new worker without waiting for the fork to finish.

        Returns (a holder whose item 0 becomes the worker's pid once :meth:`settle` has
        read the server's answer, request write fd, reply read fd). The worker owns its
        pipes from the start, so requests may be written before the pid is known.
        """
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        holder: list[int | None] = [None]
        try:
            with self._lock:
                socket.send_fds(self._sock, [self._spawn_message.encode()], [req_r, rep_w])
                self._pending.append(holder)
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        os.set_blocking(req_w, False)
        return holder, req_w, rep_r

    def settle(self) -> None:
        """Read the answers to every spawn sent so far (they come back in order)."""
        with self._lock:
            while self._pending:
                reply = self._receive(REQUEST_TIMEOUT_S)
                self._pending.popleft()[0] = int(reply["pid"])

    def finish(self, pid: int, *, wait_s: float = 0.0) -> dict[str, Any]:
        """Reap worker ``pid`` (waiting up to ``wait_s`` for it to exit), killing it if alive.

        Returns ``{"status": raw wait status or None, "killed": bool}``.
        """
        op = "reap" if wait_s > 0 else "kill"
        message = json.dumps({"op": op, "pid": pid, "wait_s": wait_s}).encode()
        try:
            with self._lock:
                self.settle()
                self._sock.send(message)
                return self._receive(REQUEST_TIMEOUT_S + wait_s)
        except (OSError, SandboxError):
            self.close()  # an unresponsive server takes all its workers with it
            return {"status": None, "killed": True, "server_lost": True}

    def close(self) -> None:
        """Stop the server; it kills and reaps every worker before exiting."""
        if self._sock.fileno() >= 0:
            self._sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._stderr.close()

    def _receive(self, timeout: float) -> dict[str, Any]:
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(1 << 16)
        except TimeoutError:
            raise SandboxError("the fork server did not answer in time") from None
        except OSError as exc:
            raise SandboxError(f"the fork server connection failed: {exc}") from None
        if not data:
            raise SandboxError("the fork server exited")
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise SandboxError("malformed reply from the fork server")
        return reply

    def _stderr_tail(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f"; {lines[-1][:300]}" if lines else ""
