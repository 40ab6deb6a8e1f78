"""One worker: a forked child of the fork server that hosts one environment instance.

Order matters. The worker first hardens itself (fds, private tmp, rlimits, scrubbed and
guarded environment, capped output capture, fd guards, seccomp) while it may still use
ctypes and fork-free setup, then installs the audit hook, and only then reads environment
code. The serving loop binds everything it needs as locals before any environment code
runs, so monkeypatching modules afterwards cannot change how requests are answered.
"""

from __future__ import annotations

import linecache
import os
import signal
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

from spade.sandbox import _guard, _wire, _wrappers

ENV_MODULE = "spade_env"
#: Methods reachable through ``EnvHandle.call`` besides the named ones.
EXTRA_METHODS = frozenset({"check", "render", "close"})
RECURSION_LIMIT = 2000
#: HOME inside a worker: a path that does not exist and is outside the private tmp, so
#: ``~/.ssh/id_rsa`` or ``Path.home().iterdir()`` are attempts on the host's files.
HOME = "/nonexistent"


class _Fault(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


def run_worker(  # builtins bound as defaults: env code may replace them
    req_fd: int, rep_fd: int, cfg: dict[str, Any], _audit: Any = sys.audit,
    _exit: Callable[[int], NoReturn] = os._exit, _type: Any = type, _str: Any = str,
    _base: Any = BaseException,
) -> NoReturn:  # fmt: skip
    """Entry point in the forked child; never returns."""
    code = 70
    try:
        code = _loop(*_serve(req_fd, rep_fd, cfg))
    except _base as exc:
        try:
            why = f"the worker failed: {_type(exc).__name__}: {_str(exc)[:300]}"
            _audit("spade.reply", ["e", 0, ["protocol", why], 0, [], None])
        except _base:
            pass
    finally:
        _exit(code)


def _harden(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> tuple[str, _wrappers.Capture]:
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    _set_parent_death_signal(int(cfg["zygote_pid"]))
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
    capture = _wrappers.Capture(int(cfg["limits"]["max_output_bytes"]))
    for name in ("stdout", "stderr", "__stdout__", "__stderr__"):
        setattr(sys, name, capture)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.__stdin__ = sys.stdin  # type: ignore[misc]
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": HOME, "TMPDIR": tmp,
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


def _set_parent_death_signal(zygote_pid: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != zygote_pid:
        os._exit(71)  # the fork server died before the signal was armed


def _serve(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> tuple[Any, ...]:
    """Harden the worker and install the hook; return the serving loop's arguments.

    Nothing that could silence the hook stays reachable from a frame: the hook and its
    helpers live only in the interpreter's hook list once this function has returned.
    """
    tmp, capture = _harden(req_fd, rep_fd, cfg)
    import atexit
    import gc
    import json
    import threading
    import time

    import gymnasium
    import numpy as np

    import spade
    from spade.envs import TextEnv, ToolEnv

    fds = frozenset({req_fd, rep_fd})
    raw_read, raw_write = os.read, os.write
    wrappers = _wrappers.guard_fd_functions([os, sys.modules["posix"]], fds)
    protected = (*wrappers, os.environ, os.environb, type(os.environ), type(os.environb),
                 run_worker, _serve, _loop, _load, _describe)  # fmt: skip
    watched = _guard.watch_list(
        sys.modules, [TextEnv, ToolEnv, gymnasium.Env, json.JSONEncoder, json.JSONDecoder]
    )
    if cfg["level"] != "none":
        from spade.sandbox import _seccomp

        _seccomp.install(os.getpid(), cfg["seccomp_base"])
    here = os.path.dirname(os.path.abspath(__file__))
    hook = _guard.make_hook(
        tmp_dir=tmp, read_roots=cfg["read_roots"], library_roots=cfg["library_roots"],
        sandbox_dirs=sorted({here, os.path.realpath(here)}), control_fds=fds,
        reply_fd=rep_fd, write=raw_write, protected=protected,
        preexisting_types=cfg["preexisting"], watched=watched,
        reply_codes=(_loop.__code__, run_worker.__code__),
        worker_codes=(_describe.__code__,),
    )  # fmt: skip
    for name in list(sys.modules):
        # A later `import ctypes` must really import (and be seen); the sandbox's own
        # modules are none of the environment's business (importing them is tampering).
        if (name in _guard.NATIVE_MODULES or name.startswith(_guard.NATIVE_PREFIXES)
                or name == "spade.sandbox" or name.startswith("spade.sandbox.")):  # fmt: skip
            del sys.modules[name]
    spade.__dict__.pop("sandbox", None)
    sys.addaudithook(hook)
    del hook
    teardown = (gc.collect, atexit._run_exitfuncs, threading.enumerate,
                threading.current_thread, __import__("_thread")._count, time.monotonic,
                time.sleep)  # fmt: skip
    return req_fd, raw_read, capture, np, TextEnv, ToolEnv, json, cfg, teardown


def _loop(
    req_fd: int, read: Any, capture: _wrappers.Capture, np: Any, text_env: type, tool_env: type,
    json: Any, cfg: dict[str, Any], teardown: tuple[Any, ...],
) -> int:  # fmt: skip
    """Answer requests until the parent hangs up. Everything used is a local."""
    audit, unpack = sys.audit, _wire.HEADER.unpack_from
    decode, from_wire = json.JSONDecoder().decode, _wire.from_wire
    isinstance_, type_, len_, str_, repr_ = isinstance, type, len, str, repr
    int_, float_, bool_, list_, tuple_, dict_ = int, float, bool, list, tuple, dict
    bytes_, map_, getattr_, max_, base_exception = bytes, map, getattr, max, BaseException
    fault_type, extra_methods = _Fault, EXTRA_METHODS
    np_bool, np_int, np_float = np.bool_, np.integer, np.floating
    max_depth, filename = _wire.MAX_DEPTH, [cfg.get("filename", "<env>")]
    describe, load = _describe, _load
    all_, is_scalar = all, _wire.SCALARS.__contains__
    collect, run_exitfuncs, threads, current, thread_count, monotonic, sleep = teardown
    buf = bytearray()
    env: list[Any] = []

    def key(k: Any) -> str:
        if type_(k) is str_:
            return k
        if isinstance_(k, str_):
            return str_.__str__(k)
        return str_(k)

    cap = int(cfg["limits"]["max_response_bytes"])
    room = [cap]  # characters of text the current reply may still carry

    def convert(v: Any, depth: int) -> Any:
        t = type_(v)
        if t is str_:
            room[0] -= len_(v)
            if room[0] < 0:  # fail fast; the parent enforces the real byte limit anyway
                raise fault_type("protocol", f"reply of over {cap} bytes exceeds the limit "
                                 f"of {cap} bytes")  # fmt: skip
            return v
        if t is int_ or t is float_ or t is bool_ or v is None:
            return v
        if depth >= max_depth:
            raise fault_type("exception", f"return value nested deeper than {max_depth} levels")
        if t is tuple_:
            return {"T": [convert(x, depth + 1) for x in v]}
        if t is list_:
            return [convert(x, depth + 1) for x in v]
        if t is dict_:
            return {"D": {key(k): convert(x, depth + 1) for k, x in v.items()}}
        if isinstance_(v, np_bool):
            return bool_(v)
        if isinstance_(v, np_int):
            return int_(v)
        if isinstance_(v, np_float):
            return float_(v)
        if isinstance_(v, str_):
            return str_.__str__(v)
        if isinstance_(v, bool_):
            return bool_(v)
        if isinstance_(v, int_):
            return int_.__int__(v)
        if isinstance_(v, float_):
            return float_.__float__(v)
        if isinstance_(v, tuple_):
            return {"T": [convert(x, depth + 1) for x in tuple_.__iter__(v)]}
        if isinstance_(v, list_):
            return [convert(x, depth + 1) for x in list_.__iter__(v)]
        if isinstance_(v, dict_):
            return {"D": {key(k): convert(x, depth + 1) for k, x in dict_.items(v)}}
        try:
            text = repr_(v)
            text = text[:200] if type_(text) is str_ else "?"
        except base_exception as exc:
            text = f"<repr failed: {type_(exc).__name__}>"
        return {"O": [type_(v).__name__[:200], text]}

    def finalize(budget: Any) -> None:
        """Drop the environment, collect, run atexit callbacks, let threads finish."""
        deadline = monotonic() + (float_(budget) if type_(budget) in (int_, float_) else 0.3)
        env.clear()
        collect()
        run_exitfuncs()
        me = current()
        for thread in threads():
            if thread is not me:
                thread.join(max_(deadline - monotonic(), 0.0))
        while thread_count() and monotonic() < deadline:  # threads started with _thread
            sleep(0.005)
        collect()

    def dispatch(method: str, args: list[Any]) -> Any:
        if method == "load":
            filename[0] = args[1]
            obj, info = load(args[0], args[1], text_env, tool_env)
            env.append(obj)
            return info
        if method == "finalize":
            return finalize(args[0] if args else None)
        target = env[0] if env else None
        if target is None:
            raise fault_type("protocol", "no environment loaded")
        if method == "reset":  # DESIGN §3: called by keyword, options only when given
            if args[1] is None:
                return target.reset(seed=args[0])
            return target.reset(seed=args[0], options=args[1])
        if method == "step":
            return target.step(args[0])
        if method == "call_tool":
            return target.call_tool(args[0], args[1])
        if method == "solution":
            return target.solution()
        if method in extra_methods:
            return getattr_(target, method)(*args)
        raise fault_type("protocol", f"unknown method {method!r}")

    while True:
        while len_(buf) < 4 or len_(buf) < 4 + unpack(buf)[0]:
            chunk = read(req_fd, 1 << 16)
            if not chunk:
                return 0
            buf += chunk
        size = unpack(buf)[0]
        nonce, method, args = decode(bytes_(buf[4 : 4 + size]).decode("utf-8", "surrogatepass"))
        del buf[: 4 + size]
        if method == "close":
            audit("spade.reply", ["r", nonce, None, 0, None, None])
            return 0
        try:
            if not all_(map_(is_scalar, map_(type_, args))):
                args = from_wire(args)
            result = dispatch(method, args)
            room[0] = cap
            message = ["r", nonce, convert(result, 0), 0, None, None]
        except fault_type as fault:
            message = ["e", nonce, [fault.kind, fault.message], 0, None, None]
        except base_exception as exc:
            message = ["e", nonce, ["exception", describe(exc, filename[0])], 0, None, None]
        result = args = None  # hold no reference to the environment's objects
        if capture.parts or capture.dropped:
            message[5] = [capture.take(), capture.dropped]
        try:
            audit("spade.reply", message)
        except base_exception as exc:
            fallback = f"the reply could not be encoded: {type_(exc).__name__}: {str_(exc)[:200]}"
            audit("spade.reply", ["e", nonce, ["exception", fallback], 0, None, None])


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
    _Fault: Any = _Fault, _describe: Any = _describe, _audit: Any = sys.audit,
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
