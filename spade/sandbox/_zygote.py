"""The fork server: one long-lived interpreter per (isolation level, hash seed).

It imports the runtime once (numpy, gymnasium, spade.envs, ...) and forks one worker per
environment instance, so a worker starts in a few milliseconds instead of the ~0.5 s of a
fresh interpreter. Under bwrap it is the only process the sandbox launches; every worker
is its child inside the same namespaces. It is trusted code: it never runs environment
code itself, and workers cannot reach it (the control socket is closed in every child and
seccomp forbids signals to other processes).

Requests arrive on a SOCK_SEQPACKET socket as JSON and name workers by an id the parent
chose (pids may be reused): ``spawn`` (carries the worker's two pipe ends as
SCM_RIGHTS), ``kill`` (SIGKILL; reaped in the background) and ``reap`` (the only one answered: the
worker's wait status once it has ended, killing it if it is still alive after
``wait_s``). EOF on the socket kills and reaps every worker and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
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
    "warnings", "inspect", "ast", "_json", "resource", "ctypes", "sqlite3", "signal",
    "spade.sandbox._worker", "spade.sandbox._guard", "spade.sandbox._wire",
)  # fmt: skip


#: Read-only hierarchies every sandboxed process needs (shared libraries, the interpreter).
RUNTIME_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/usr/share/zoneinfo")
#: Single files that may be read (``/dev/null`` may also be written).
READ_FILES = ("/etc/ld.so.cache", "/dev/null", "/dev/urandom", "/dev/random", "/dev/zero")


def main(argv: list[str]) -> None:
    """``argv``: spade root, socket fd, isolation level, worker tmp base."""
    sock = socket.socket(fileno=int(argv[1]))
    spade_root, level, tmp_base = argv[0], argv[2], argv[3]
    extra = tuple(n for n in (argv[4] if len(argv) > 4 else "").split(",") if n)
    try:
        cfg = _prepare(level, tmp_base, spade_root, extra)
    except BaseException as exc:
        sock.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        os._exit(3)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    try:
        _confine_server(cfg)
    except BaseException as exc:
        sock.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        os._exit(3)
    _spread_pids(int(os.environ.get("PYTHONHASHSEED", "0")))
    hello = {"ok": True, "pid": os.getpid(), "landlock": cfg["landlock"]}
    sock.send(json.dumps(hello).encode())
    _serve(sock, cfg)


def _confine_server(cfg: dict[str, Any]) -> None:
    """Make the server itself no easier a target than its workers.

    Undumpable (no ``/proc/<pid>/mem``, ``/proc/<pid>/fd`` or ptrace for processes without
    CAP_SYS_PTRACE, which nothing in the sandbox has; workers inherit it), confined by
    Landlock to the read-only roots and the worker tmp base where workers share that base
    (level ``rlimits``), and under a seccomp filter that allows what serving needs (fork,
    kill of its own children, the unshare and mount of a new worker's own tmp) and
    nothing that reaches other processes' memory, creates sockets or executes programs.
    Workers inherit both and add their own, stricter ones.
    """
    from spade.sandbox import _landlock, _seccomp

    _set_dumpable(False)
    # A Landlock domain forbids mounting, and under bwrap every worker mounts its own tmp
    # (see _isolation): there the server relies on seccomp and its undumpable state.
    if cfg["landlock"] and not cfg["private_tmp"]:
        # /proc: a worker's own domain narrows this to its /proc/<pid> (domains nest).
        _landlock.restrict([*cfg["landlock_dirs"], "/proc"], cfg["landlock_files"],
                           [cfg["tmp_base"]], ["/dev/null"], cfg["landlock"])  # fmt: skip
    if cfg["level"] != "none":
        _seccomp.server_filter(cfg["notify"] is not None).load()


def _spread_pids(hash_seed: int) -> None:
    """Use up ``1 + hash_seed % 64`` pids, so the first workers of two fork servers get
    different pids where workers share the server's pid namespace (level ``rlimits``): an
    environment whose instances depend on its pid then differs between the two
    determinism workers. Under bwrap every worker is pid 2 of its own namespace."""
    for _ in range(1 + hash_seed % 64):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


def _set_dumpable(on: bool) -> None:
    import ctypes

    from spade.sandbox import _landlock

    if _landlock.libc().prctl(4, 1 if on else 0, 0, 0, 0):  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "PR_SET_DUMPABLE failed")


def _prepare(
    level: str, tmp_base: str, spade_root: str, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    import gc
    import importlib
    import importlib.util

    for name in PRELOAD:
        importlib.import_module(name)
    for name in extra:  # an allowlisted heavy library (checked by the parent)
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(name)
    from spade.sandbox import _landlock, _worker

    _worker.__name__  # noqa: B018 - imported for the fork
    libc = _landlock.libc()
    capset_args = clone = notify = None
    if level == "bwrap":  # each worker gets its own namespaces and tmpfs
        from spade.sandbox import _isolation, _nsinit

        capset_args, clone = _isolation.make_capset_args(), _nsinit.clone_number()
        _isolation.make_mounts_private(libc)
        _isolation.self_test(libc, tmp_base, capset_args, clone)
        notify = _listener(libc, clone)
    processes = None
    if notify is not None and clone is not None:
        processes = _process_listener(libc, clone, notify)
    seccomp_base = seccomp_program = None
    if level != "none":
        from spade.sandbox import _seccomp

        named = processes is not None
        try:  # a program that cannot be precompiled is compiled by every worker
            seccomp_program = _seccomp.worker_program(libc, notify is not None, named)
        except (OSError, RuntimeError, ValueError):
            seccomp_program = None
        _self_test(seccomp_program, named)
        if seccomp_program is None:  # what each worker then adds its own rules to
            seccomp_base = _seccomp.base_filter(notify is not None, named)
    landlock = _landlock_self_test(level, tmp_base)
    import spade

    root = os.path.realpath(spade_root)
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != root]
    # Library code lives under these (read-only) roots; every sys.path entry counts, even
    # one that does not exist (importlib.metadata lists them all, e.g. python311.zip).
    entries = [p for p in sys.path if p]
    library_roots = {*entries, *(os.path.realpath(p) for p in entries)}
    library_roots |= {*spade.__path__, *(os.path.realpath(p) for p in spade.__path__)}
    read_roots = {os.path.realpath(p) for p in library_roots} | {"/usr/share/zoneinfo"}
    gc.collect()
    # The classes themselves, not their ids: a freed class's id is reused by the next one
    # (an environment's own dataclass would pass for a runtime class). Taken after the
    # collection, and kept alive by this tuple for the life of every worker.
    preexisting = tuple(o for o in gc.get_objects() if isinstance(o, type))
    gc.freeze()  # keep the shared heap out of later collections (copy-on-write friendly)
    return {
        "level": level,
        "tmp_base": tmp_base,
        "read_roots": sorted(read_roots),
        "library_roots": sorted(library_roots),
        "preexisting": preexisting,
        "preexisting_ids": frozenset(map(id, preexisting)),
        "libc": libc,
        "zygote_pid": os.getpid(),
        "seccomp_base": seccomp_base,
        "seccomp_program": seccomp_program,
        "landlock": landlock,
        "private_tmp": capset_args is not None,
        "capset_args": capset_args,
        "clone": clone,
        "notify": notify,
        "processes": processes,
        "landlock_dirs": sorted({*read_roots, *RUNTIME_DIRS}),
        "landlock_files": list(READ_FILES),
    }


def _listener(libc: Any, clone: tuple[int, bool]) -> tuple[int, bytes] | None:
    """What a worker's init loads to name the calls seccomp refuses (see ``_nsinit``), or
    None where the kernel cannot (the workers' own filter then kills them unnamed)."""
    import pyseccomp

    from spade.sandbox import _nsinit, _seccomp

    if os.uname().machine not in _nsinit.GENERIC_IOCTL:
        return None
    try:
        number = int(pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "seccomp"))
        notify = (number, _seccomp.notify_program())
    except (OSError, RuntimeError, ValueError):
        return None
    return notify if _nsinit.listener_works(libc, clone, notify) else None


def _process_listener(libc: Any, clone: tuple[int, bool], notify: Any) -> bytes | None:
    """The workers' own listener program (process creation, thread starts, calls aimed at
    other pids; see ``_nsinit``), when a worker started with it has its fork named and its
    threads run; None otherwise (the workers' filter then kills those calls unnamed)."""
    import threading

    from spade.sandbox import _nsinit, _seccomp

    try:
        program = _seccomp.process_program(_nsinit.WORKER_PID)
    except (OSError, RuntimeError, ValueError):
        return None
    pid, handoff = _nsinit.fork_isolated(libc, clone, notify, threads=8)
    if pid == 0:
        code = 1
        try:
            _nsinit.hand_over(libc, handoff, notify[0], program)
            thread = threading.Thread(target=lambda: None)
            thread.start()
            thread.join()
            code = 2
            os.fork()  # named by the init, which ends this process
            code = 3
        finally:
            os._exit(code)
    if pid < 0:
        return None
    status = _nsinit.worker_status(os.waitpid(pid, 0)[1])
    named = _nsinit.refused_call(handoff)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS and named == "clone":
        return program
    return None


def _self_test(program: Any, processes: bool = False) -> None:
    """Prove that the workers' seccomp filter loads here and is enforced: a forked child
    loads it the way workers do, signals itself (allowed), then its parent, which must
    kill it with SIGSYS, or, where the workers' init names such calls (``processes``),
    refuse it (fail closed otherwise)."""
    import errno

    from spade.sandbox import _seccomp

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _seccomp.install(os.getpid(), program=program, processes=processes)
            os.kill(os.getpid(), 0)
            code = 2
            os.kill(os.getppid(), 0)
        except OSError as exc:
            if code == 2 and processes and exc.errno == errno.ENOSYS:
                code = 4  # refused (the worker's init would have named it)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    refused = processes and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 4
    if not refused and not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS):
        raise RuntimeError(
            "the seccomp filter could not be loaded (libseccomp missing?)"
            if os.waitstatus_to_exitcode(status) == 1
            else "the seccomp filter did not stop a signal to another process"
        )


def _landlock_self_test(level: str, tmp_base: str) -> int:
    """The Landlock ABI to use: 0 at level ``none``, or when a forked child cannot restrict
    itself (the sandbox then reports the weaker filesystem layer instead of failing)."""
    from spade.sandbox import _landlock

    version = _landlock.abi() if level != "none" else 0
    if not version:
        return 0
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _landlock.restrict(["/usr"], ["/dev/null"], [tmp_base], [], version)
            try:
                os.open("/proc/1/status", os.O_RDONLY)
            except PermissionError:
                code = 0  # really enforced
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return version if os.waitstatus_to_exitcode(status) == 0 else 0


def _serve(sock: socket.socket, cfg: dict[str, Any]) -> None:
    """Answer the parent until it hangs up; see the module doc for the messages."""
    import select

    workers = _Workers(sock, cfg)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while True:
        # Poll while something is due: a killed worker to reap or a reap to answer.
        if poller.poll(2 if workers.busy() else None):
            try:
                data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
            except InterruptedError:
                continue
            if not data:
                break
            workers.handle(json.loads(data), fds)
        workers.collect()
        workers.answer_due()
    workers.shutdown()
    os._exit(0)


class _Workers:
    """The fork server's table of its workers: forks, kills, reaps and reap answers.

    Workers are named by the ids the parent chooses (never by pid, which may be reused);
    a worker's wait status is kept until the parent asks, unless the parent had it killed.
    """

    def __init__(self, sock: socket.socket, cfg: dict[str, Any]) -> None:
        from spade.sandbox import _nsinit, _worker

        self.sock, self.run_worker, self.nsinit = sock, _worker.run_worker, _nsinit
        self.base = cfg  # the server's own dict: emptied in every worker (see ``spawn``)
        self.cfg = {**cfg, "hidden_modules": _worker.hidden_modules(sys.modules),
                    "sandbox_files": _worker.sandbox_files(sys.modules),
                    **_worker.constant_paths()}  # fmt: skip
        self.pids: dict[int, int] = {}  # worker id -> pid, until reaped
        self.ids: dict[int, int] = {}  # pid -> worker id
        self.statuses: dict[int, int] = {}  # wait status of workers that ended on their own
        self.killed: set[int] = set()  # ids the parent had killed: nobody asks how they ended
        self.waiting: dict[int, float] = {}  # id -> deadline of an unanswered reap
        self.reports: dict[int, int] = {}  # pid -> read end of its init's report pipe
        self.refused: dict[int, str] = {}  # id -> the call seccomp refused it, if any

    def busy(self) -> bool:
        return bool(self.killed or self.waiting)

    def handle(self, request: dict[str, Any], fds: list[int]) -> None:
        import time

        op, wid = request["op"], int(request["id"])
        if op == "spawn":
            self.spawn(wid, fds, request["limits"])
        elif op == "kill":
            self.statuses.pop(wid, None)
            self.refused.pop(wid, None)
            self.kill(wid)
        elif op == "reap":
            self.waiting[wid] = time.monotonic() + float(request.get("wait_s", 0.2))

    def spawn(self, wid: int, fds: list[int], limits: dict[str, Any]) -> None:
        own_pid_ns = self.cfg["clone"] is not None
        try:  # under bwrap: in a pid namespace of its own (see _isolation)
            pid, report = (
                self.nsinit.fork_isolated(
                    self.cfg["libc"], self.cfg["clone"], self.cfg["notify"],
                    int(limits.get("max_threads", 128)) if self.cfg["processes"] else 0)
                if own_pid_ns else (os.fork(), -1)
            )  # fmt: skip
        except OSError:
            pid, report = -1, -1  # a later reap answers "unknown": the channel was closed
        if pid == 0:
            self.sock.close()
            run, cfg = self.run_worker, {**self.cfg, "limits": limits}
            if own_pid_ns:  # its parent is its namespace's init
                cfg["zygote_pid"] = 1
                cfg["handoff"] = report
            # The worker's own copy is the only one left: it drops the native handles
            # from it before environment code runs (the server's frames stay below it).
            self.base.clear()
            self.cfg.clear()
            run(fds[0], fds[1], cfg)
        for fd in fds:
            os.close(fd)
        if pid > 0:
            self.pids[wid], self.ids[pid] = pid, wid
            if report >= 0:
                self.reports[pid] = report

    def answer(self, wid: int, status: int | None, was_killed: bool) -> None:
        del self.waiting[wid]
        message = {"id": wid, "status": status, "killed": was_killed,
                   "refused": self.refused.pop(wid, None)}  # fmt: skip
        self.sock.send(json.dumps(message).encode())

    def ended(self, pid: int, status: int) -> None:
        wid = self.ids.pop(pid, None)
        if wid is None:
            return
        self.pids.pop(wid, None)
        self.remove_tmp(pid)
        if self.cfg["clone"] is not None:  # the init's status passes on the worker's
            status = self.nsinit.worker_status(status)
        report = self.reports.pop(pid, -1)
        if report >= 0:  # the call seccomp refused, as the worker's init reported it
            refused = self.nsinit.refused_call(report)
            if refused is not None and wid not in self.killed:
                self.refused[wid] = refused
        if wid in self.waiting:
            self.answer(wid, status, wid in self.killed)
        elif wid not in self.killed:
            self.statuses[wid] = status
        self.killed.discard(wid)

    def collect(self) -> None:
        while self.ids:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.ended(pid, status)

    def kill(self, wid: int) -> None:
        pid = self.pids.get(wid)
        if pid is not None and wid not in self.killed:
            self.killed.add(wid)
            os.kill(pid, signal.SIGKILL)  # a zombie can still be signalled: no race

    def answer_due(self) -> None:
        import time

        now = time.monotonic()
        for wid, deadline in list(self.waiting.items()):
            if wid in self.statuses:
                self.answer(wid, self.statuses.pop(wid), False)
            elif wid not in self.pids:  # unknown, already reaped, or never forked
                self.answer(wid, None, False)
            elif now > deadline:
                self.kill(wid)  # still alive although it closed its channel
                self.waiting[wid] = now + 5.0

    def shutdown(self) -> None:
        """Kill and reap every worker (the parent hung up)."""
        for pid in self.pids.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while True:
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            self.ids.pop(pid, None)
            self.remove_tmp(pid)

    def remove_tmp(self, pid: int) -> None:
        """Remove a worker's tmp dir; never raises. Under bwrap there is nothing to do: the
        tmp was a tmpfs in the worker's own mount namespace and went with it."""
        if not self.cfg["private_tmp"]:
            remove_tree(os.path.join(self.cfg["tmp_base"], f"w{pid}"))


#: Most entries :func:`remove_tree` visits before it gives up (a bound on the server's
#: time; what is left stays in the sandbox's tmp until the sandbox closes).
REMOVE_LIMIT = 200_000


def remove_tree(root: str, limit: int = REMOVE_LIMIT) -> None:
    """Remove ``root`` and everything below it without recursion and at any depth (it
    walks by ``chdir`` into each directory and back, so no path ever grows past the
    kernel's limit), making each directory writable and searchable first (a read-only
    subdirectory is no obstacle), never following symlinks, never raising, and stopping
    after ``limit`` entries. The working directory is restored."""
    try:
        here = os.open(".", os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return
    try:
        _remove_below(root, limit)
    except BaseException:  # the server's loop must never die of a tmp dir
        pass
    finally:
        with contextlib.suppress(OSError):
            os.fchdir(here)
        os.close(here)
    with contextlib.suppress(OSError, ValueError):
        os.rmdir(root)


def _remove_below(root: str, limit: int) -> None:
    os.chmod(root, 0o700, follow_symlinks=False)
    os.chdir(root)
    names: list[str] = []  # the directories entered below root, outermost first
    seen = 0
    while seen < limit:
        subdir = None
        with os.scandir(".") as entries:
            for entry in entries:
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    subdir = entry.name
                    break
                with contextlib.suppress(OSError):
                    os.unlink(entry.name)
        if subdir is not None:
            with contextlib.suppress(OSError):
                os.chmod(subdir, 0o700, follow_symlinks=False)
            os.chdir(subdir)
            names.append(subdir)
            continue
        if not names:
            return
        os.chdir("..")
        os.rmdir(names.pop())  # one that cannot go: give up (the caller catches it)
