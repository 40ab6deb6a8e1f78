"""The fork server: one long-lived interpreter per (isolation level, hash seed).

It imports the runtime once (numpy, gymnasium, spade.envs, ...) and forks one worker per
environment instance, so a worker starts in a few milliseconds instead of the ~0.5 s of a
fresh interpreter. Under bwrap it is the only process the sandbox launches; every worker
is its child inside the same namespaces. It is trusted code: it never runs environment
code itself, and workers cannot reach it (the control socket is closed in every child and
seccomp forbids signals to other processes).

Requests arrive on a SOCK_SEQPACKET socket as JSON; ``spawn`` carries the worker's two pipe
ends as SCM_RIGHTS. Replies are JSON. EOF on the socket kills every worker and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
from typing import Any

#: Modules a typical environment imports, loaded once so workers start warm.
PRELOAD = (
    "numpy", "gymnasium", "spade.envs", "json", "random", "math", "re", "collections",
    "itertools", "functools", "dataclasses", "typing", "string", "enum", "heapq", "bisect",
    "fractions", "decimal", "copy", "textwrap", "datetime", "statistics", "operator",
    "hashlib", "tempfile", "pathlib", "traceback", "linecache", "abc", "numbers", "types",
    "struct", "array", "io", "time", "uuid", "unicodedata", "difflib", "csv", "base64",
    "warnings", "inspect", "ast", "_json", "resource", "ctypes",
    "spade.sandbox._worker", "spade.sandbox._guard", "spade.sandbox._wire",
)  # fmt: skip


def main(argv: list[str]) -> None:
    """``argv``: spade root, socket fd, isolation level, worker tmp base."""
    sock = socket.socket(fileno=int(argv[1]))
    spade_root, level, tmp_base = argv[0], argv[2], argv[3]
    try:
        cfg = _prepare(level, tmp_base, spade_root)
    except BaseException as exc:
        sock.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        os._exit(3)
    sock.send(json.dumps({"ok": True, "pid": os.getpid()}).encode())
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    _serve(sock, cfg)


def _prepare(level: str, tmp_base: str, spade_root: str) -> dict[str, Any]:
    import gc
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    seccomp_base = None
    if level != "none":
        from spade.sandbox import _seccomp

        _self_test()
        seccomp_base = _seccomp.base_filter()
    import spade

    root = os.path.realpath(spade_root)
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != root]
    read_roots = {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    read_roots |= {os.path.realpath(p) for p in spade.__path__}
    read_roots.add("/usr/share/zoneinfo")
    from spade.sandbox import _worker

    _worker.__name__  # noqa: B018 - imported for the fork
    preexisting = frozenset(id(o) for o in gc.get_objects() if isinstance(o, type))
    gc.collect()
    gc.freeze()  # keep the shared heap out of later collections (copy-on-write friendly)
    return {
        "level": level,
        "tmp_base": tmp_base,
        "read_roots": sorted(read_roots),
        "preexisting": preexisting,
        "zygote_pid": os.getpid(),
        "seccomp_base": seccomp_base,
    }


def _self_test() -> None:
    """Prove that a seccomp filter loads here (fail closed otherwise)."""
    from spade.sandbox import _seccomp

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _seccomp.install(os.getpid())
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the seccomp filter could not be loaded (libseccomp missing?)")


def _serve(sock: socket.socket, cfg: dict[str, Any]) -> None:
    from spade.sandbox._worker import run_worker

    children: set[int] = set()
    finished: dict[int, int] = {}

    def reap(pid: int, block: bool) -> int | None:
        if pid in finished:
            return finished.pop(pid)
        if pid not in children:
            return None
        try:
            got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            children.discard(pid)
            return None
        if got == 0:
            return None
        children.discard(pid)
        shutil.rmtree(os.path.join(cfg["tmp_base"], f"w{pid}"), ignore_errors=True)
        return status

    def collect() -> None:
        for pid in list(children):
            status = reap(pid, block=False)
            if status is not None:
                finished[pid] = status

    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
        except InterruptedError:
            continue
        if not data:
            break
        request = json.loads(data)
        op = request["op"]
        if op == "spawn":
            pid = os.fork()
            if pid == 0:
                sock.close()
                run_worker(fds[0], fds[1], {**cfg, "limits": request["limits"]})
            for fd in fds:
                os.close(fd)
            children.add(pid)
            reply: dict[str, Any] = {"pid": pid}
        else:
            pid = int(request["pid"])
            status = reap(pid, block=False)
            if status is None and op == "reap":
                status = _wait(pid, float(request.get("wait_s", 0.2)), reap)
            killed = False
            if status is None and pid in children:
                os.kill(pid, signal.SIGKILL)
                killed = True
                status = reap(pid, block=True)
            reply = {"status": status, "killed": killed}
        collect()
        sock.send(json.dumps(reply).encode())
    for pid in list(children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        reap(pid, block=True)
    os._exit(0)


def _wait(pid: int, seconds: float, reap: Any) -> int | None:
    import time

    deadline = time.monotonic() + seconds
    while True:
        status = reap(pid, block=False)
        if status is not None or time.monotonic() > deadline:
            return status
        time.sleep(0.002)
