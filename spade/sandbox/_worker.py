"""One worker: a forked child of the fork server that hosts one environment instance.

Order matters. The worker first hardens itself (fds, private tmp, rlimits, scrubbed and
guarded environment, capped output capture, fd guards, seccomp) while it may still use
ctypes and fork-free setup, then installs the audit hook, and only then reads environment
code. The serving loop binds everything it needs as locals before any environment code
runs, so monkeypatching modules afterwards cannot change how requests are answered.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, NoReturn

from spade.sandbox import _guard, _wire

ENV_MODULE = "spade_env"
#: Methods reachable through ``EnvHandle.call`` besides the named ones.
EXTRA_METHODS = frozenset({"check", "render", "close"})
RECURSION_LIMIT = 2000


class _Fault(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


class _Capture:
    """``sys.stdout``/``sys.stderr`` of a worker: keeps the first ``cap`` characters."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, cap: int) -> None:
        self.room, self.dropped = cap, 0
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        keep = text[: max(self.room, 0)]
        self.room -= len(keep)
        self.dropped += len(text) - len(keep)
        if keep:
            self.parts.append(keep)
        return len(text)

    def take(self) -> str:
        text = "".join(self.parts)
        self.parts.clear()
        return text

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("output is captured by the sandbox")


def run_worker(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> NoReturn:
    """Entry point in the forked child; never returns."""
    code = 70
    try:
        code = _serve(req_fd, rep_fd, cfg)
    except BaseException as exc:
        try:
            why = f"the worker failed: {type(exc).__name__}: {str(exc)[:300]}"
            sys.audit("spade.reply", ["e", 0, ["protocol", why], 0, [], None])
        except BaseException:
            pass
    finally:
        os._exit(code)


def _harden(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> tuple[str, _Capture]:
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
    capture = _Capture(int(cfg["limits"]["max_output_bytes"]))
    for name in ("stdout", "stderr", "__stdout__", "__stderr__"):
        setattr(sys, name, capture)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.__stdin__ = sys.stdin  # type: ignore[misc]
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp, "TMPDIR": tmp,
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
    for key in list(os.environ):
        os.unsetenv(key)
    for key, value in env.items():
        os.putenv(key, value)
    import posix
    import tempfile

    posix.environ = {k.encode(): v.encode() for k, v in env.items()}
    os.environ = _guard.GuardedEnviron(env)  # type: ignore[assignment]  # noqa: B003
    os.environb = _guard.GuardedEnviron(posix.environ)  # type: ignore[assignment]
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


def _serve(req_fd: int, rep_fd: int, cfg: dict[str, Any]) -> int:
    tmp, capture = _harden(req_fd, rep_fd, cfg)
    import json
    from _json import encode_basestring, make_encoder

    import numpy as np

    from spade.envs import TextEnv, ToolEnv

    def _no_default(value: Any) -> Any:
        raise TypeError(f"cannot encode {type(value).__name__}")

    c_encode = make_encoder(None, _no_default, encode_basestring, None, ":", ",",
                            False, False, True)  # fmt: skip

    def encode(message: Any, _join: Any = "".join, _enc: Any = c_encode) -> str:
        return _join(_enc(message, 0))

    fds = frozenset({req_fd, rep_fd})
    raw_read, raw_write = os.read, os.write
    wrappers = _guard.guard_fd_functions([os, sys.modules["posix"]], fds)
    environ = os.environ
    protected = frozenset(
        id(x) for x in (*wrappers, environ, os.environb, type(environ), run_worker, _serve)
    )
    import gymnasium

    watched = _guard.watch_list(
        sys.modules, [TextEnv, ToolEnv, gymnasium.Env, json.JSONEncoder, json.JSONDecoder]
    )
    if cfg["level"] != "none":
        from spade.sandbox import _seccomp

        _seccomp.install(os.getpid(), cfg["seccomp_base"])
    hook = _guard.make_hook(
        tmp_dir=tmp, read_roots=cfg["read_roots"], control_fds=fds, reply_fd=rep_fd,
        write=raw_write,
        encode=encode, protected_ids=protected, preexisting_types=cfg["preexisting"],
        watched=watched,
    )  # fmt: skip
    for name in list(sys.modules):  # a later `import ctypes` must really import (and be seen)
        if name in _guard.NATIVE_MODULES or name.startswith("ctypes."):
            del sys.modules[name]
    sys.addaudithook(hook)
    return _loop(req_fd, raw_read, capture, np, TextEnv, ToolEnv, json, cfg)


def _loop(
    req_fd: int, read: Any, capture: _Capture, np: Any, text_env: type, tool_env: type,
    json: Any, cfg: dict[str, Any],
) -> int:  # fmt: skip
    """Answer requests until the parent hangs up. Everything used is a local."""
    audit, unpack = sys.audit, _wire.HEADER.unpack_from
    decode, from_wire = json.JSONDecoder().decode, _wire.from_wire
    isinstance_, type_, len_, str_, repr_ = isinstance, type, len, str, repr
    int_, float_, bool_, list_, tuple_, dict_ = int, float, bool, list, tuple, dict
    np_bool, np_int, np_float = np.bool_, np.integer, np.floating
    max_depth, filename = _wire.MAX_DEPTH, [cfg.get("filename", "<env>")]
    describe, load = _describe, _load
    all_, is_scalar = all, _wire.SCALARS.__contains__
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
                raise _Fault("protocol", f"reply of over {cap} bytes exceeds the limit of "
                             f"{cap} bytes")  # fmt: skip
            return v
        if t is int_ or t is float_ or t is bool_ or v is None:
            return v
        if depth >= max_depth:
            raise _Fault("exception", f"return value nested deeper than {max_depth} levels")
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
        except BaseException as exc:
            text = f"<repr failed: {type_(exc).__name__}>"
        return {"O": [type_(v).__name__[:200], text]}

    def dispatch(method: str, args: list[Any]) -> Any:
        if method == "load":
            filename[0] = args[1]
            obj, info = load(args[0], args[1], text_env, tool_env)
            env.append(obj)
            return info
        target = env[0] if env else None
        if target is None:
            raise _Fault("protocol", "no environment loaded")
        if method == "reset":
            return target.reset(seed=args[0], options=args[1])
        if method == "step":
            return target.step(args[0])
        if method == "call_tool":
            return target.call_tool(args[0], args[1])
        if method == "solution":
            return target.solution()
        if method in EXTRA_METHODS:
            return getattr(target, method)(*args)
        raise _Fault("protocol", f"unknown method {method!r}")

    while True:
        while len_(buf) < 4 or len_(buf) < 4 + unpack(buf)[0]:
            chunk = read(req_fd, 1 << 16)
            if not chunk:
                return 0
            buf += chunk
        size = unpack(buf)[0]
        nonce, method, args = decode(bytes(buf[4 : 4 + size]).decode("utf-8", "surrogatepass"))
        del buf[: 4 + size]
        if method == "close":
            audit("spade.reply", ["r", nonce, None, 0, None, None])
            return 0
        try:
            if not all_(map(is_scalar, map(type_, args))):
                args = from_wire(args)
            result = dispatch(method, args)
            room[0] = cap
            message = ["r", nonce, convert(result, 0), 0, None, None]
        except _Fault as fault:
            message = ["e", nonce, [fault.kind, fault.message], 0, None, None]
        except BaseException as exc:
            message = ["e", nonce, ["exception", describe(exc, filename[0])], 0, None, None]
        if capture.parts or capture.dropped:
            message[5] = [capture.take(), capture.dropped]
        try:
            audit("spade.reply", message)
        except BaseException as exc:
            fallback = f"the reply could not be encoded: {type_(exc).__name__}: {str_(exc)[:200]}"
            audit("spade.reply", ["e", nonce, ["exception", fallback], 0, None, None])


def _load(
    source: str, filename: str, text_env: type, tool_env: type,
    isinstance: Any = isinstance, issubclass: Any = issubclass, type: Any = type,
    getattr: Any = getattr, len: Any = len, sorted: Any = sorted, list: Any = list,
    id: Any = id, all: Any = all, BaseException: Any = BaseException,
) -> tuple[Any, dict]:  # fmt: skip
    import linecache
    import types

    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise _Fault("load", f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(ENV_MODULE)
    module.__file__ = filename
    sys.modules[ENV_MODULE] = module
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


def _describe(  # builtins bound as defaults: env code may replace them
    exc: BaseException, filename: str, isinstance: Any = isinstance, type: Any = type,
    str: Any = str, SystemExit: Any = SystemExit, BaseException: Any = BaseException,
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
            import linecache

            line = linecache.getline(filename, tb.tb_lineno).strip()
            where = f" (line {tb.tb_lineno}: {line[:120]})" if line else f" (line {tb.tb_lineno})"
        tb = tb.tb_next
    return (text[:400] + where)[:600]
