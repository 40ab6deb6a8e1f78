"""Parent side of one fork server: start it, ask it for workers, kill them, learn how they ended.

Workers are named by ids the parent chooses (never by pid, which the kernel may reuse).
``spawn`` and ``kill`` are one-way messages: nothing waits for a fork or a reap, and the
server reaps killed workers in the background. Only ``reap`` (how did this worker end?)
has a reply; one reap exchange runs at a time. Every method is safe from any thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from spade.sandbox import _launch
from spade.sandbox._types import Isolation, IsolationUnavailable, SandboxError, SandboxLimits

#: Seconds a fork server may take to import the runtime.
START_TIMEOUT_S = 60.0
#: Seconds for one exchange with a healthy fork server (plus any reap wait).
REQUEST_TIMEOUT_S = 10.0

T = TypeVar("T")
#: Runs a callable on the thread that must own the server process (see ``Sandbox``).
Launch = Callable[[Callable[[], T]], T]


def _direct(fn: Callable[[], T]) -> T:
    return fn()


class ForkServer:
    """One fork server process (inside its own bwrap for level ``bwrap``)."""

    def __init__(
        self,
        level: Isolation,
        hash_seed: int,
        limits: SandboxLimits,
        tmp_base: str | None,
        launch: Launch[Any] = _direct,
        preload: tuple[str, ...] = (),
    ) -> None:
        self.level, self.hash_seed = level, hash_seed
        self._limits = json.dumps(dataclasses.asdict(limits))
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()  # sends, and closing the socket
        self._reply_lock = threading.Lock()  # one reap exchange at a time
        self._closed = False
        self._sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        inner_tmp = "/tmp" if level == Isolation.BWRAP else str(tmp_base)
        argv = _launch.python_argv(child.fileno(), level.value, inner_tmp, preload)
        if level == Isolation.BWRAP:
            argv = _launch.bwrap_argv(_launch.find_bwrap(), limits) + argv
        # A pipe the launcher owns (never a host file): the server points its own fds 0-2
        # at /dev/null once started, and the read end is drained only to explain a failure.
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(err_r, False)
        self._stderr = err_r
        try:
            self.proc = launch(
                lambda: subprocess.Popen(
                    argv,
                    env=_launch.scrubbed_env(hash_seed, inner_tmp),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err_w,
                    pass_fds=[child.fileno()],
                    start_new_session=True,
                    cwd="/",
                )
            )
        except BaseException:
            self._sock.close()
            os.close(err_r)
            raise
        finally:
            child.close()
            os.close(err_w)
        self._await_hello()

    def _await_hello(self) -> None:
        """Wait for the server's first message; a server that did not start is closed and
        reported as :class:`IsolationUnavailable` with its stderr's last words."""
        self._sock.settimeout(START_TIMEOUT_S)
        try:
            hello = self._receive()
        except SandboxError as exc:
            tail = self._stderr_tail()
            self.close()
            raise IsolationUnavailable(
                f"the {self.level.value} sandbox failed to start ({exc}{tail}): "
                f"{_launch.INSTALL_HINT}"
            ) from None
        self.landlock = int(hello.get("landlock") or 0)
        if not hello.get("ok"):
            self.close()
            raise IsolationUnavailable(
                f"the {self.level.value} sandbox failed to start ({hello.get('error')}): "
                f"{_launch.INSTALL_HINT}"
            )
        self._sock.settimeout(REQUEST_TIMEOUT_S)

    @property
    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def spawn(self) -> tuple[int, int, int]:
        """Ask for a new worker without waiting for the fork.

        Returns (worker id, request write fd, reply read fd). The worker owns its pipes
        from the start, so requests may be written before it exists.
        """
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        wid = next(self._ids)
        message = f'{{"op":"spawn","id":{wid},"limits":{self._limits}}}'.encode()
        try:
            with self._send_lock:
                if self._closed:
                    raise SandboxError("the fork server is closed")
                socket.send_fds(self._sock, [message], [req_r, rep_w])
        except OSError as exc:
            for fd in (req_w, rep_r):
                os.close(fd)
            self.close()
            raise SandboxError(f"the fork server connection failed: {exc}") from None
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        os.set_blocking(req_w, False)
        return wid, req_w, rep_r

    def kill(self, wid: int) -> None:
        """SIGKILL worker ``wid``; the server reaps it in the background (never waits)."""
        with self._send_lock:
            if self._closed:
                return  # the server is gone, and its workers with it
            try:
                self._sock.send(b'{"op":"kill","id":%d}' % wid)
                return
            except OSError:
                pass
        self.close()  # an unresponsive server takes all its workers with it

    def reap(self, wid: int, wait_s: float) -> dict[str, Any]:
        """How worker ``wid`` ended, waiting up to ``wait_s`` for it (killed after that).

        Returns ``{"status": raw wait status or None, "killed": bool}`` (plus
        ``"server_lost": True`` when the server did not answer; it is then closed).
        """
        message = json.dumps({"op": "reap", "id": wid, "wait_s": wait_s}).encode()
        try:
            with self._reply_lock:
                with self._send_lock:
                    if self._closed:
                        raise SandboxError("the fork server is closed")
                    self._sock.send(message)
                while True:
                    reply = self._receive()
                    if reply.get("id") == wid:
                        return reply
        except (OSError, SandboxError):
            self.close()
            return {"status": None, "killed": True, "server_lost": True}

    def close(self) -> None:
        """Stop the server; it kills and reaps every worker before exiting."""
        with self._send_lock:
            first = not self._closed
            self._closed = True
            if first:
                with contextlib.suppress(OSError):  # wakes a thread waiting for a reply
                    self._sock.shutdown(socket.SHUT_RDWR)
        if not first:
            return
        with self._reply_lock:  # nobody uses the socket any more
            self._sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self._stderr)

    def _receive(self) -> dict[str, Any]:
        try:
            data = self._sock.recv(1 << 16)
        except TimeoutError:
            raise SandboxError("the fork server did not answer in time") from None
        except OSError as exc:
            raise SandboxError(f"the fork server connection failed: {exc}") from None
        if not data:
            raise SandboxError("the fork server exited")
        try:
            reply = json.loads(data)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise SandboxError("malformed reply from the fork server")
        return reply

    def _stderr_tail(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        try:
            lines = os.read(self._stderr, 1 << 16).decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; {lines[-1][:300]}" if lines else ""
