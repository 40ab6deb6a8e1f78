"""Detection inside the worker: an audit hook that records AND blocks forbidden attempts.

The hook is installed after the runtime is imported and before environment code runs. It
is the only owner of the violation record and of the reply writer: the serving loop hands
replies to it through ``sys.audit("spade.reply", ...)`` and the hook stamps every frame it
writes with the violations seen so far. Environment code therefore cannot drop a report by
monkeypatching ``os``/``json``/builtins or by editing the loop's state; the hook function
itself is unreachable from Python once installed. Everything the hook needs is bound when
it is built, and it never calls environment-defined code (no ``repr``/``str``/``==`` on
foreign objects), so environment code never runs on top of the hook's frame.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextlib import suppress
from typing import Any

#: Environment variables stdlib and numeric libraries read on their own; reading any other
#: key is an attempt at the launcher's environment (the real environment is scrubbed anyway).
BENIGN_ENV_KEYS = frozenset(
    {"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS",
     "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PWD", "SHELL",
     "LOGNAME", "USER", "LNAME", "USERNAME", "TZDIR"}
)  # fmt: skip
BENIGN_ENV_PREFIXES = ("LC_", "PYTHON", "OMP_", "OPENBLAS_", "MKL_", "NUMEXPR_", "NUMPY_",
                       "KMP_", "VECLIB_", "GOTO_", "BLIS_", "NPY_")  # fmt: skip

_NETWORK_PREFIXES = ("socket.", "urllib.", "http.", "ftplib.", "smtplib.", "imaplib.",
                     "poplib.", "nntplib.", "telnetlib.", "webbrowser.", "ssl.")  # fmt: skip
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
     "os.forkpty", "pty.spawn", "os.startfile", "_posixsubprocess.fork_exec"}
)  # fmt: skip
_SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})
_TAMPER_EVENTS = frozenset(
    {"sys.addaudithook", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
     "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
     "resource.setrlimit", "resource.prlimit", "code.__new__", "sys.remote_exec"}
)  # fmt: skip
#: Events whose string arguments are paths the code wants to change.
_WRITE_EVENTS = frozenset(
    {"os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown", "os.link",
     "os.symlink", "os.truncate", "os.utime", "os.chflags", "os.lchflags", "os.lchmod",
     "os.lchown", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod",
     "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree",
     "shutil.chown", "shutil.move", "shutil.rmtree", "shutil.make_archive",
     "shutil.unpack_archive", "tempfile.mkstemp", "tempfile.mkdtemp", "sqlite3.connect",
     "dbm.open"}
)  # fmt: skip
#: Events whose string arguments are paths the code wants to read or list.
_LIST_EVENTS = frozenset(
    {"os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.chdir", "os.getxattr",
     "os.listxattr", "os.fwalk"}
)  # fmt: skip
#: Modules that give native code access; importing them is a violation.
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend", "pyseccomp"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_READ_FILES = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
#: Module attributes whose replacement is reported (fooling the checker).
WATCHED = {
    "builtins": ("isinstance", "type", "len", "print", "open", "__import__", "repr", "str",
                 "int", "float", "bool", "tuple", "list", "dict", "getattr", "setattr",
                 "hasattr", "exec", "eval", "compile", "id", "hash", "super", "object",
                 "range", "iter", "next", "sorted", "min", "max", "sum", "abs", "round"),
    "json": ("dumps", "loads", "dump", "load", "JSONEncoder", "JSONDecoder"),
    "sys": ("audit", "addaudithook", "exit"),
    "os": ("write", "read", "_exit", "kill", "getpid", "close", "dup2", "environ"),
}  # fmt: skip


def watch_list(modules: dict[str, Any], classes: list[type]) -> list[tuple[Any, Any, Any]]:
    """(owner, attribute, current value) triples to re-check at every reply.

    Classes are watched whole (every attribute plus the attribute count), because setting
    a class attribute raises no audit event.
    """
    out: list[tuple[Any, Any, Any]] = []
    for module_name, names in WATCHED.items():
        module = modules[module_name]
        out += [(module, name, module.__dict__.get(name)) for name in names]
    for cls in classes:
        out += [(cls, name, value) for name, value in list(cls.__dict__.items())]
        out.append((cls, None, len(cls.__dict__)))
    return out


def benign_env_key(key: str) -> bool:
    """Whether reading environment variable ``key`` is ordinary library behaviour."""
    return key in BENIGN_ENV_KEYS or key.startswith(BENIGN_ENV_PREFIXES)


def make_hook(
    *,
    tmp_dir: str,
    read_roots: Iterable[str],
    control_fds: Iterable[int],
    reply_fd: int,
    write: Callable[[int, Any], int],
    encode: Callable[[Any], str],
    protected_ids: frozenset[int],
    preexisting_types: frozenset[int],
    watched: list[tuple[Any, str, Any]],
    max_records: int = 50,
) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook (call ``sys.addaudithook`` on the result)."""
    tmp_prefix = tmp_dir.rstrip("/") + "/"
    roots = tuple(sorted({r.rstrip("/") + "/" for r in read_roots if r}))
    fds = frozenset(control_fds)
    realpath, fsdecode, getcwd, join = os.path.realpath, os.fsdecode, os.getcwd, os.path.join
    get_ident = __import__("_thread").get_ident
    lock = __import__("_thread").allocate_lock()
    header, idof, typeof = __import__("struct").Struct(">I").pack, id, type
    str_, bytes_, int_, tuple_, list_ = str, bytes, int, tuple, list
    records: list[list[str]] = []
    state = {"total": 0, "sent": 0}
    reported_watch: set[str] = set()
    busy: set[int] = set()

    def send(message: list[Any]) -> None:
        body = encode(message).encode("utf-8", "surrogatepass")
        data = header(len(body)) + body
        with lock:
            view = memoryview(data)
            while view:
                view = view[write(reply_fd, view) :]

    def record(category: str, detail: str) -> None:
        state["total"] += 1
        if len(records) < max_records:
            records.append([category, detail[:300]])
        new = records[state["sent"] :]
        state["sent"] = len(records)
        with suppress(OSError):  # the reply carries the record too
            send(["v", 0, None, state["total"], new, None])

    def text(value: Any) -> str:
        kind = typeof(value)
        if kind is str_:
            return value[:200]
        if kind is bytes_:
            return fsdecode(value)[:200]
        if kind is int_:
            return str_(value)
        if kind is tuple_ or kind is list_:
            return "(" + ", ".join(text(v) for v in value[:6]) + ")"
        return f"<{kind.__name__}>"

    def resolve(path: Any) -> str | None:
        kind = typeof(path)
        if kind is bytes_:
            path = fsdecode(path)
        elif kind is not str_:
            return None
        if not path.startswith("/"):
            path = join(getcwd(), path)
        return realpath(path)

    def inside(path: str, prefixes: tuple[str, ...]) -> bool:
        return path.startswith(prefixes) or path + "/" in prefixes

    def may_read(path: str) -> bool:
        return path in _READ_FILES or inside(path, (tmp_prefix, *roots))

    def check_open(args: tuple[Any, ...]) -> None:
        path, mode, flags = ((*args, None, None, None))[:3]
        if typeof(path) is int_:
            if path in fds:
                deny("tampering", f"open of the sandbox control fd {path}")
            return
        real = resolve(path)
        if real is None:
            deny("filesystem", f"open of a path given as {text(path)}")
            return
        writing = (typeof(flags) is int_ and flags & _WRITE_FLAGS) or (
            typeof(mode) is str_ and any(c in mode for c in "wax+")
        )
        if writing and not (inside(real, (tmp_prefix,)) or real == "/dev/null"):
            deny("filesystem", f"open for writing {real}")
        elif not writing and not may_read(real):
            deny("filesystem", f"open {real}")

    def check_paths(event: str, args: tuple[Any, ...], writing: bool) -> None:
        for arg in args:
            if typeof(arg) is int_ and arg in fds:
                deny("tampering", f"{event} on the sandbox control fd {arg}")
            real = resolve(arg)
            if real is None:
                continue
            ok = inside(real, (tmp_prefix,)) if writing else may_read(real)
            if not ok:
                deny("filesystem", f"{event} {real}")

    def deny(category: str, detail: str) -> None:
        record(category, detail)
        raise PermissionError(f"sandbox: {category} access is not allowed ({detail})")

    # The hot path (every reply): one C-level itemgetter per owner, one identity pass over
    # all watched values, and the attribute counts of the watched classes.
    operator = __import__("operator")
    chain = __import__("itertools").chain.from_iterable
    is_, all_, map_, len_, module_type = operator.is_, all, map, len, typeof(sys)
    owners: dict[int, Any] = {}
    names_of: dict[int, list[str]] = {}
    values_of: dict[int, list[Any]] = {}
    for owner, name, original in watched:
        if name is not None:
            owners[idof(owner)] = owner
            names_of.setdefault(idof(owner), []).append(name)
            values_of.setdefault(idof(owner), []).append(original)
    # ``owner.__dict__`` of a class is a fresh read-only proxy each time; keep one per owner.
    getters = [(owners[i].__dict__, operator.itemgetter(*names, names[0]))
               for i, names in names_of.items()]  # fmt: skip
    snapshot = tuple(chain((*values_of[i], values_of[i][0]) for i in names_of))
    class_size = {i: len(o.__dict__) for i, o in owners.items() if typeof(o) is not module_type}
    class_maps = tuple(owners[i].__dict__ for i in class_size)
    class_sizes = tuple(class_size.values())

    def unchanged() -> bool:
        try:
            now = [get(mapping) for mapping, get in getters]
        except KeyError:
            return False
        return all_(map_(is_, chain(now), snapshot)) and tuple(
            map_(len_, class_maps)
        ) == class_sizes

    def check_watched() -> None:
        if unchanged():
            return
        for ident, owner in owners.items():
            now = owner.__dict__
            pairs = zip(names_of[ident], values_of[ident], strict=True)
            changed = [n for n, v in pairs if now.get(n) is not v]
            if class_size.get(ident, len(now)) != len(now):
                changed.append("(new attribute)")
            for name in changed:
                key = f"{getattr(owner, '__qualname__', owner.__name__)}.{name}"
                if key not in reported_watch:
                    reported_watch.add(key)
                    record("tampering", f"replaced {key}")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        try:
            dispatch(event, args)
        finally:
            busy.discard(tid)

    def dispatch(event: str, args: tuple[Any, ...]) -> None:
        if event == "spade.reply":
            check_watched()
            message = args[0]  # [kind, nonce, payload, total, new records, output]
            message[3] = state["total"]
            message[4] = records[state["sent"] :]
            state["sent"] = len(records)
            send(message)
        elif event == "open":
            check_open(args)
        elif event == "import":
            name = args[0]
            if typeof(name) is str_ and (name in NATIVE_MODULES or name.startswith("ctypes.")):
                deny("native", f"import {name}")
        elif event == "spade.environ":
            op, key = args
            if op == "list":
                record("environment", "enumeration of os.environ")
            else:
                record("environment", f"read of os.environ[{text(key)!r}]")
        elif event == "spade.fd":
            deny("tampering", f"os.{args[0]} on the sandbox control fd {args[1]}")
        elif event in _LIST_EVENTS:
            check_paths(event, args, writing=False)
        elif event in _WRITE_EVENTS:
            check_paths(event, args, writing=True)
        elif event.startswith(_NETWORK_PREFIXES):
            deny("network", f"{event} {text(args[1:] if event == 'socket.connect' else args)}")
        elif event in _PROCESS_EVENTS:
            deny("process", f"{event} {text(args[:2])}")
        elif event in _SIGNAL_EVENTS:
            deny("signal", f"{event} {text(args)}")
        elif event.startswith("ctypes."):
            deny("native", f"{event} (ctypes)")
        elif event in _TAMPER_EVENTS:
            if event == "sys.addaudithook":
                record("tampering", event)
                raise RuntimeError("sandbox: adding audit hooks is not allowed")
            deny("tampering", event)
        elif event in ("fcntl.fcntl", "fcntl.ioctl", "fcntl.flock", "fcntl.lockf"):
            if args and typeof(args[0]) is int_ and args[0] in fds:
                deny("tampering", f"{event} on the sandbox control fd {args[0]}")
        elif event in ("object.__setattr__", "object.__delattr__", "object.__getattr__"):
            target = args[0]
            if idof(target) in protected_ids:
                deny("tampering", f"{event} {text(args[1])} on a sandbox object")
            elif event != "object.__getattr__" and idof(target) in preexisting_types:
                name = getattr(target, "__qualname__", "?") if typeof(target) is type else "?"
                deny("tampering", f"modifying attribute {text(args[1])} of {text(name)}")

    return hook


class GuardedEnviron(MutableMapping[Any, Any]):
    """``os.environ`` inside a worker: reads of unusual keys and enumeration are reported.

    The data is already scrubbed (a few harmless variables); the guard is about intent, so
    a read of an unknown key is reported and behaves like a missing key.
    """

    def __init__(self, data: dict[Any, Any]) -> None:
        self._data = dict(data)
        self._mine: set[Any] = set()

    def __getitem__(self, key: Any, _audit: Any = sys.audit) -> Any:
        name = os.fsdecode(key) if isinstance(key, bytes | str) else None
        if key not in self._mine and (name is None or not benign_env_key(name)):
            _audit("spade.environ", "read", name if name is not None else "?")
        return self._data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value
        self._mine.add(key)

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __iter__(self, _audit: Any = sys.audit) -> Iterator[Any]:
        _audit("spade.environ", "list", "")
        return iter(list(self._data))

    def __len__(self, _audit: Any = sys.audit) -> int:
        _audit("spade.environ", "list", "")
        return len(self._data)

    def copy(self) -> dict[Any, Any]:
        return dict(self)

    def __repr__(self) -> str:
        return f"environ({dict(self)!r})"


def guard_fd_functions(modules: list[Any], control_fds: frozenset[int]) -> list[Any]:
    """Wrap fd-level functions of ``os``/``posix`` so they refuse the control fds.

    Returns the wrappers (their ids are protected by the hook).
    """
    single = ("close", "dup", "write", "writev", "pwrite", "pwritev", "read", "readv", "pread",
              "preadv", "set_blocking", "set_inheritable", "lseek", "ftruncate", "fchmod",
              "fchown", "fchdir", "login_tty")  # fmt: skip
    double = ("dup2", "sendfile", "splice", "copy_file_range")
    wrappers: list[Any] = []
    for name in (*single, *double, "closerange"):
        raw = getattr(modules[0], name, None)
        if raw is None:
            continue
        wrapper = _wrap(name, raw, control_fds, name in double)
        wrappers.append(wrapper)
        for module in modules:
            if getattr(module, name, None) is raw:
                setattr(module, name, wrapper)
    return wrappers


def _wrap(name: str, raw: Any, fds: frozenset[int], two: bool) -> Any:
    if name == "closerange":

        def closerange(low: int, high: int, _raw: Any = raw, _audit: Any = sys.audit) -> None:
            for fd in sorted(fds):
                if low <= fd < high:
                    _audit("spade.fd", name, fd)
            _raw(low, high)

        return closerange

    def wrapper(*args: Any, _raw: Any = raw, _audit: Any = sys.audit, **kwargs: Any) -> Any:
        for fd in args[: 2 if two else 1]:
            if type(fd) is int and fd in fds:
                _audit("spade.fd", name, fd)
        return _raw(*args, **kwargs)

    wrapper.__name__ = name
    return wrapper
