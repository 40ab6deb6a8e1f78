"""One worker: a forked child of the fork server that hosts one environment instance.

Order matters. The worker first hardens itself (fds, private tmp, rlimits, scrubbed and
guarded environment, capped output capture, fd guards, seccomp) while it may still use
ctypes and fork-free setup, then installs the audit hook, and only then reads environment
code. The serving loop binds everything it needs as locals before any environment code
runs, so monkeypatching modules afterwards cannot change how requests are answered.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import signal
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

from spade.sandbox import _clock, _events, _guard, _serving, _tamper, _wire, _wrappers

ENV_MODULE = _serving.ENV_MODULE
RECURSION_LIMIT = 2000
#: HOME inside a worker: a path that does not exist and is outside the private tmp, so
#: ``~/.ssh/id_rsa`` or ``Path.home().iterdir()`` are attempts on the host's files.
HOME = "/nonexistent"
#: The modules whose code runs inside the audit hook (a signal arriving in one of their
#: frames is deferred until the hook has returned).
HOOK_MODULES = ("_guard", "_attribution", "_wire", "_events", "_handlers", "_paths",
                "_reporter", "_tamper")  # fmt: skip
#: Entries of the worker's configuration that hold native handles (ctypes objects): used
#: while the worker hardens itself, dropped before environment code runs.
NATIVE_HANDLES = ("libc", "seccomp_program", "seccomp_base", "capset_args")


def run_worker(  # builtins bound as defaults: env code may replace them
    req_fd: int, rep_fd: int, cfg: dict[str, Any], _audit: Any = sys.audit,
    _exit: Callable[[int], NoReturn] = os._exit, _type: Any = type, _str: Any = str,
    _base: Any = BaseException,
) -> NoReturn:  # fmt: skip
    """Entry point in the forked child; never returns."""
    code = 70
    try:
        args = _serve(req_fd, rep_fd, cfg)
        for name in NATIVE_HANDLES:  # no C library handle stays reachable from a frame
            cfg.pop(name, None)
        code = _serving.serve(*args)
    except _base as exc:
        try:
            why = f"the worker failed: {_type(exc).__name__}: {_str(exc)[:300]}"
            _audit("spade.reply", ["e", 0, ["protocol", why], 0, [], None])
        except _base:
            pass
    finally:
        _exit(code)


def _harden(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> tuple[str, _wrappers.Capture]:
    handoff = cfg.pop("handoff", -1)
    if cfg.get("processes") is not None and handoff >= 0:  # its init names process calls
        from spade.sandbox import _nsinit

        try:
            _nsinit.hand_over(cfg["libc"], handoff, cfg["notify"][0], cfg["processes"])
        except OSError:
            os._exit(75)
    if cfg.get("private_tmp"):  # own mount and IPC namespaces, own tmpfs, no capabilities
        from spade.sandbox import _isolation

        try:
            _isolation.isolate(cfg["libc"], cfg["tmp_base"],
                               _isolation.tmpfs_options(cfg["limits"]), cfg["capset_args"])
        except OSError:
            os._exit(75)  # never serve without the isolation that was promised
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    _set_parent_death_signal(int(cfg["zygote_pid"]), cfg["libc"])
    keep = sorted({req_fd, rep_fd})
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, 65536)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    tmp = os.path.join(cfg["tmp_base"], f"w{os.getpid()}")
    os.mkdir(tmp, 0o700)
    os.chdir(tmp)
    tmp = os.path.realpath(tmp)
    if cfg["level"] != "none":
        _set_rlimits(cfg["limits"])
    _confine(cfg, tmp)
    capture = _wrappers.Capture(int(cfg["limits"]["max_output_bytes"]))
    for name in ("stdout", "stderr", "__stdout__", "__stderr__"):
        setattr(sys, name, capture)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.__stdin__ = sys.stdin  # type: ignore[misc]
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": HOME, "TMPDIR": tmp,
           "MPLCONFIGDIR": tmp + "/.matplotlib", "XDG_CACHE_HOME": tmp + "/.cache",
           "MPLBACKEND": "Agg",
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
    for key in list(os.environ):
        os.unsetenv(key)
    for key, value in env.items():
        os.putenv(key, value)
    import posix
    import tempfile

    environb = _wrappers.guarded_environ({k.encode(): v.encode() for k, v in env.items()})
    posix.environ = environb  # type: ignore[assignment]
    os.environ = _wrappers.guarded_environ(env)  # type: ignore[assignment]  # noqa: B003
    os.environb = environb  # type: ignore[assignment]
    tempfile.tempdir = tmp
    sys.setrecursionlimit(RECURSION_LIMIT)
    return tmp, capture


def _confine(cfg: dict[str, Any], tmp: str) -> None:
    """Undumpable, and (where the kernel has Landlock) confined to the runtime's read-only
    roots, its own ``/proc/<pid>`` (read) and its own private tmp (read and write).

    The worker's Landlock domain is its own: the fork server and every sibling worker are
    outside it, so ``/proc/<pid>/mem``, ``/proc/<pid>/fd`` and signals cannot reach them,
    and neither can another worker's tmp, whatever the audit hook sees.
    """
    if cfg["libc"].prctl(4, 0, 0, 0, 0):  # PR_SET_DUMPABLE
        os._exit(72)
    if cfg.get("landlock"):
        from spade.sandbox import _landlock

        try:
            _landlock.restrict([*cfg["landlock_dirs"], "/proc/self/task"],
                               [*cfg["landlock_files"], "/proc/self"],
                               [tmp], ["/dev/null"], int(cfg["landlock"]),
                               cfg["libc"])  # fmt: skip
        except OSError:
            os._exit(73)  # never serve unconfined when confinement was promised


def _set_rlimits(limits: dict[str, Any]) -> None:
    import resource

    mb = 1 << 20
    cpu = int(limits["cpu_s"])
    for res, value in (
        (resource.RLIMIT_AS, int(limits["memory_mb"]) * mb),
        (resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * mb),
        (resource.RLIMIT_NOFILE, int(limits["open_files"])),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _set_parent_death_signal(zygote_pid: int, libc: Any) -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != zygote_pid:
        os._exit(71)  # the fork server died before the signal was armed


def _serve(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> tuple[Any, ...]:
    """Harden the worker and install the hook; return the serving loop's arguments.

    Nothing that could silence the hook stays reachable from a frame: the hook and its
    helpers live only in the interpreter's hook list once this function has returned.
    """
    tmp, capture = _harden(req_fd, rep_fd, cfg)
    import json

    import gymnasium
    import numpy as np

    import spade
    from spade.envs import TextEnv, ToolEnv

    key = _read_key(req_fd)
    stat_fd = os.open("/proc/self/stat", os.O_RDONLY | os.O_CLOEXEC)
    fds = frozenset({req_fd, rep_fd, stat_fd})
    raw_read, raw_write = os.read, os.write  # the raw functions, before the fd guards
    os_calls = (os.dup, os.close, os.pread, os.scandir, os.statvfs, os.open, os.listdir,
                signal.getitimer)  # fmt: skip
    wrappers, flush_signals = _install_wrappers(fds, cfg["hook_files"])
    protected = (*wrappers, os.environ, os.environb, type(os.environ), type(os.environb),
                 run_worker, _serve, _serving.serve, _load, _describe)  # fmt: skip
    watched = _tamper.watch_list(
        sys.modules, [TextEnv, ToolEnv, gymnasium.Env, json.JSONEncoder, json.JSONDecoder]
    )
    if cfg["level"] != "none":
        from spade.sandbox import _seccomp

        _seccomp.install(os.getpid(), cfg["seccomp_base"], cfg["seccomp_program"],
                         cfg.get("processes") is not None)
    parts = _serving_parts(cfg, capture, (stat_fd, tmp, os_calls), np, (TextEnv, ToolEnv))
    decode = _wire.make_decoder()
    read = _wire.spinning_reader(raw_read, req_fd, int(cfg["limits"].get("spin_us", 0)))
    hook = _guard.make_hook(
        tmp_dir=tmp, read_roots=cfg["read_roots"], library_roots=cfg["library_roots"],
        sandbox_dirs=cfg["sandbox_dirs"], control_fds=fds,
        reply_fd=rep_fd, write=raw_write, protected=protected,
        preexisting_ids=cfg["preexisting_ids"], watched=watched,
        reply_codes=(_serving.serve.__code__, run_worker.__code__),
        worker_codes=(_describe.__code__,), key=key,
        cell_roots=(*wrappers, flush_signals, decode, read, parts["convert"][0],
                    parts["dispatch"], parts["check"]),
        sandbox_files=cfg.get("sandbox_files") or sandbox_files(sys.modules),
    )  # fmt: skip
    del key
    # After the hook is built: its own path resolution keeps the raw readlink.
    _wrappers.guard_readlink([os, sys.modules["posix"]])
    _wrappers.guard_memfd([os, sys.modules["posix"]])
    hide_sandbox_modules(sys.modules, spade, cfg["hidden_modules"])
    sys.addaudithook(hook)
    del hook
    cap = int(cfg["limits"]["max_response_bytes"])
    return req_fd, read, capture, parts, decode, cap, flush_signals


def _install_wrappers(
    fds: frozenset[int], hook_files: frozenset[str]
) -> tuple[list[Any], Callable[[], None]]:
    """Put the guards in front of the fd functions, ``signal.signal``, sqlite, ``os.open``
    with ``dir_fd`` and the global RNGs; ``(wrappers, flush_signals)``."""
    wrappers = _wrappers.guard_fd_functions([os, sys.modules["posix"]], fds)
    signal_wrapper, flush_signals = _wrappers.guard_signals(hook_files)
    wrappers += [signal_wrapper, *_wrappers.guard_sqlite()]
    wrappers += _wrappers.guard_open_at([os, sys.modules["posix"]])
    wrappers += _wrappers.guard_global_rng(sys.modules)
    wrappers += _wrappers.guard_faulthandler(fds)
    return wrappers, flush_signals


def constant_paths() -> dict[str, Any]:
    """The hook modules' files and the sandbox's directory, as named and resolved (a
    ``stat`` per path part): the fork server works them out once for its workers."""
    files = [str(sys.modules[f"spade.sandbox.{n}"].__file__) for n in HOOK_MODULES]
    here = os.path.dirname(os.path.abspath(__file__))
    return {"hook_files": frozenset([*files, *map(os.path.realpath, files)]),
            "sandbox_dirs": sorted({here, os.path.realpath(here)})}  # fmt: skip


def hidden_modules(modules: dict[str, Any]) -> tuple[tuple[str, ...], int]:
    """``(names, count)``: the modules a worker drops from ``modules`` (a later ``import
    ctypes`` must really import, and be seen; the sandbox's own modules are none of the
    environment's business), and how many modules there were.

    The fork server works this out once: a worker that still has exactly ``count``
    modules has the same ones (only trusted setup code ran since the fork, and imports
    only add), so it need not read every module name again (which copies pages).
    """
    names = tuple(
        name for name in modules
        if name in _events.NATIVE_MODULES or name.startswith(_events.NATIVE_PREFIXES)
        or name == "spade.sandbox" or name.startswith("spade.sandbox.")
    )  # fmt: skip
    return names, len(modules)


def sandbox_files(modules: dict[str, Any]) -> frozenset[str]:
    """The sandbox's own source files (as named and resolved); the fork server works this
    out once for its workers."""
    files = [str(m.__file__) for n, m in list(modules.items())
             if n.startswith("spade.sandbox.") and getattr(m, "__file__", None)]  # fmt: skip
    return frozenset([*files, *map(os.path.realpath, files)])


def hide_sandbox_modules(
    modules: dict[str, Any], spade: Any, known: tuple[tuple[str, ...], int]
) -> None:
    """Drop :func:`hidden_modules` from ``modules`` (``known``: the fork server's answer,
    used only while the module count still matches it)."""
    names = known[0] if known[1] == len(modules) else hidden_modules(modules)[0]
    for name in names:
        modules.pop(name, None)
    spade.__dict__.pop("sandbox", None)


def _serving_parts(
    cfg: dict[str, Any], capture: Any, resources: tuple[int, str, tuple[Any, ...]], np: Any,
    env_bases: tuple[type, type],
) -> dict[str, Any]:  # fmt: skip
    """The serving loop's named parts: converter, dispatcher, resource check, describer.

    ``resources``: the ``/proc/self/stat`` fd, the private tmp and the raw os functions
    the resource check uses (taken before the fd guards were put in front of them).
    """
    import atexit
    import gc
    import threading
    import time

    teardown = (gc.collect, atexit._run_exitfuncs, threading.enumerate,
                threading.current_thread, __import__("_thread")._count, time.monotonic,
                time.sleep, _clock.shift_clock)  # fmt: skip
    filename = [cfg.get("filename", "<env>")]
    stat_fd, tmp, os_calls = resources
    check = _serving.make_resource_check(capture, teardown, cfg["limits"], os_calls, stat_fd,
                                         tmp, bool(cfg.get("private_tmp")))  # fmt: skip
    return {
        "convert": _serving.make_converter(np, int(cfg["limits"]["max_response_bytes"])),
        "dispatch": _serving.make_dispatch(_load, *env_bases, teardown, filename),
        "check": check, "describe": _describe, "filename": filename,
    }  # fmt: skip


def _read_key(req_fd: int) -> bytes:
    """The frame key: the first frame on the request pipe, read before any env code (the
    requests behind it stay in the pipe for the serving loop)."""

    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = os.read(req_fd, n - len(data))
            if not chunk:
                os._exit(0)  # the parent went away before this spare was used
            data += chunk
        return data

    size = int.from_bytes(exactly(4), "big")
    if not 0 < size <= 64:
        os._exit(74)
    return exactly(size)


def _describe(  # builtins bound as defaults: env code may replace them
    exc: BaseException, filename: str, isinstance: Any = isinstance, type: Any = type,
    str: Any = str, SystemExit: Any = SystemExit, BaseException: Any = BaseException,
    _getline: Any = linecache.getline,
) -> str:  # fmt: skip
    """``Type: message (at line N: source)`` naming the last frame inside the env module."""
    if isinstance(exc, SystemExit):
        return f"the environment called sys.exit({exc.code!r})"[:500]  # type: ignore[attr-defined]
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:
        text = type(exc).__name__
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = _getline(filename, tb.tb_lineno).strip()
            where = f" (line {tb.tb_lineno}: {line[:120]})" if line else f" (line {tb.tb_lineno})"
        tb = tb.tb_next
    return (text[:400] + where)[:600]


def _load(
    source: str, filename: str, text_env: type, tool_env: type,
    isinstance: Any = isinstance, issubclass: Any = issubclass, type: Any = type,
    getattr: Any = getattr, len: Any = len, sorted: Any = sorted, list: Any = list,
    id: Any = id, all: Any = all, BaseException: Any = BaseException,
    compile: Any = compile, exec: Any = exec, SyntaxError: Any = SyntaxError,
    _Fault: Any = _serving.Fault, _describe: Any = _describe, _audit: Any = sys.audit,
    _modules: Any = sys.modules, _cache: Any = linecache.cache,
    _module_type: Any = types.ModuleType, ENV_MODULE: str = ENV_MODULE,
) -> tuple[Any, dict]:  # fmt: skip
    _audit("spade.envfile", filename)  # frames of this file are the environment's
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise _Fault("load", f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    _cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = _module_type(ENV_MODULE)
    module.__file__ = filename
    _modules[ENV_MODULE] = module
    try:
        exec(code, module.__dict__)
    except _Fault:
        raise
    except BaseException as exc:
        raise _Fault("load", "import failed: " + _describe(exc, filename)) from None
    found = {
        id(obj): obj
        for obj in list(module.__dict__.values())
        if isinstance(obj, type)
        and obj.__module__ == ENV_MODULE
        and obj.__name__.endswith("Env")
    }
    envs = [c for c in found.values() if issubclass(c, text_env)]
    if len(envs) != 1:
        names = ", ".join(sorted(c.__name__ for c in found.values())) or "none"
        raise _Fault(
            "load",
            f"expected exactly one class ending in 'Env' that subclasses TextEnv, found "
            f"{len(envs)} (classes ending in 'Env' defined in the module: {names})",
        )
    cls = envs[0]
    try:
        obj = cls()
    except BaseException as exc:
        raise _Fault("load", f"{cls.__name__}() failed: " + _describe(exc, filename)) from None
    is_tool = issubclass(cls, tool_env)
    bases = (text_env, tool_env)
    try:
        info = {
            "class_name": cls.__name__,
            "kind": "tool" if is_tool else "game",
            "max_turns": obj.max_turns,
            "success_threshold": obj.success_threshold,
            "has_solution": all(
                getattr(cls, "solution", None) is not getattr(b, "solution", None) for b in bases
            ),
            "tools": list(cls.tools()) if is_tool else [],
        }
    except BaseException as exc:
        raise _Fault("load", "reading class facts failed: " + _describe(exc, filename)) from None
    return obj, info
