"""What a worker puts in front of ``os.environ``, the fd functions and ``sys.stdout``.

Both report through ``sys.audit`` (bound when they are built), so the audit hook decides
what is a violation. Every name they use is bound at build time (default arguments and
closure cells): environment code that replaces builtins or edits a module's globals does
not change what they do, and their state lives in closures, not in attributes.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

#: Environment variables stdlib and numeric libraries read on their own; reading any other
#: key is an attempt at the launcher's environment (the real environment is scrubbed anyway).
BENIGN_ENV_KEYS = frozenset(
    {"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS",
     "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PWD", "SHELL",
     "LOGNAME", "USER", "LNAME", "USERNAME", "TZDIR", "MPLCONFIGDIR", "MPLBACKEND",
     "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"}
)  # fmt: skip
BENIGN_ENV_PREFIXES = ("LC_", "PYTHON", "_PYTHON_", "OMP_", "OPENBLAS_", "MKL_", "NUMEXPR_",
                       "NUMPY_", "KMP_", "VECLIB_", "GOTO_", "BLIS_", "NPY_")  # fmt: skip


def benign_env_key(
    key: str,
    _keys: frozenset[str] = BENIGN_ENV_KEYS,
    _prefixes: tuple[str, ...] = BENIGN_ENV_PREFIXES,
) -> bool:
    """Whether reading environment variable ``key`` is ordinary library behaviour."""
    return key in _keys or key.startswith(_prefixes)


def guarded_environ(data: dict[Any, Any]) -> MutableMapping[Any, Any]:
    """A mapping over ``data`` where reading an unusual key or enumerating is reported.

    The data is already scrubbed (a few harmless variables); the guard is about intent, so
    the read of an unknown key raises the ``spade.environ`` audit event (the hook decides
    whether it is a violation) and then behaves like a missing key would.
    """
    store, mine = dict(data), set()
    audit, benign, str_, bytes_, typeof = sys.audit, benign_env_key, str, bytes, type
    decode, iter_, list_, len_, dict_ = bytes.decode, iter, list, len, dict

    def name_of(key: Any) -> str | None:
        kind = typeof(key)
        if kind is str_:
            return key
        if kind is bytes_:
            return decode(key, "utf-8", "surrogateescape")
        return None

    class Environ(MutableMapping[Any, Any]):
        __slots__ = ()

        def __getitem__(self, key: Any) -> Any:
            name = name_of(key)
            if name is None or (not benign(name) and key not in mine):
                audit("spade.environ", "read", name if name is not None else "?")
            return store[key]

        def __setitem__(self, key: Any, value: Any) -> None:
            store[key] = value
            if name_of(key) is not None:
                mine.add(key)

        def __delitem__(self, key: Any) -> None:
            del store[key]

        def __iter__(self) -> Iterator[Any]:
            audit("spade.environ", "list", "")
            return iter_(list_(store))

        def __len__(self) -> int:
            audit("spade.environ", "list", "")
            return len_(store)

        def copy(self) -> dict[Any, Any]:
            return dict_(self)

        def __repr__(self) -> str:
            return f"environ({dict_(self)!r})"

    return Environ()


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


def _wrap(name: str, raw: Any, fds: frozenset[int], two: bool) -> Callable[..., Any]:
    # Closure cells, not default arguments: a caller could pass those as keywords.
    audit, typeof, int_, count = sys.audit, type, int, 2 if two else 1
    index, list_, type_error = operator.index, list, TypeError
    if name == "closerange":
        ordered = tuple(sorted(fds))

        def closerange(low: int, high: int) -> None:
            low, high = index(low), index(high)
            for fd in ordered:
                if low <= fd < high:
                    audit("spade.fd", "closerange", fd)
            raw(low, high)

        return closerange

    def exact(value: Any) -> Any:
        """The int the C function would use (once, so it cannot change in between)."""
        if typeof(value) is not int_:
            try:
                value = index(value)
            except type_error:
                return value
        if value in fds:
            audit("spade.fd", name, value)
        return value

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        head = [exact(a) for a in args[:count]]
        for key in list_(kwargs):
            kwargs[key] = exact(kwargs[key])
        return raw(*head, *args[count:], **kwargs)

    wrapper.__name__ = name
    return wrapper


def guard_faulthandler(control_fds: frozenset[int]) -> list[Any]:
    """Wrap the ``faulthandler`` functions that write to a file (there is no audit event
    for them): the file is turned into its fd once, here, and a control fd is refused.
    Returns the wrappers (protected by the hook)."""
    import faulthandler

    audit, typeof, int_, index = sys.audit, type, int, operator.index
    # where each function takes ``file`` positionally
    positions = {"enable": 0, "dump_traceback": 0, "dump_traceback_later": 2, "register": 1}
    wrappers: list[Any] = []

    def fd_of(target: Any, name: str) -> Any:
        fd = target if typeof(target) is int_ else index(target.fileno())
        if fd in control_fds:
            audit("spade.fd", f"faulthandler.{name}", fd)
        return fd

    def make(name: str, raw: Any, at: int) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            head = list(args)
            if len(head) > at:
                head[at] = fd_of(head[at], name)
            else:
                kwargs["file"] = fd_of(kwargs.get("file", sys.stderr), name)
            return raw(*head, **kwargs)

        wrapper.__name__ = name
        return wrapper

    for name, at in positions.items():
        raw = getattr(faulthandler, name, None)
        if raw is not None:
            wrapper = make(name, raw, at)
            setattr(faulthandler, name, wrapper)
            wrappers.append(wrapper)
    return wrappers


class Capture:
    """``sys.stdout``/``sys.stderr`` of a worker: keeps the first ``cap`` characters."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, cap: int) -> None:
        self.room, self.dropped, self.total = cap, 0, 0
        self.parts: list[str] = []

    def write(
        self, text: str, _type: Any = type, _str: Any = str, _len: Any = len, _max: Any = max
    ) -> int:
        if _type(text) is not _str:
            raise TypeError("write() argument must be str")
        keep = text[: _max(self.room, 0)]
        self.room -= _len(keep)
        self.dropped += _len(text) - _len(keep)
        self.total += _len(text)
        if keep:
            self.parts.append(keep)
        return _len(text)

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


def guard_signals(hook_files: frozenset[str]) -> tuple[Any, Callable[[], None]]:
    """Route Python signal handlers through a trampoline that never runs on top of the
    audit hook.

    A handler gets the interrupted frame and runs wherever the interpreter was; if that is
    the hook, environment code could edit the hook's state through it. A signal that
    interrupts a frame of ``hook_files`` is kept and handled (with no frame) when the next
    signal arrives outside the hook or when the current call ends (``flush``). Returns
    ``(wrapper, flush)``.
    """
    import _signal
    import signal as signal_module

    raw, callable_, isinstance_, index_error = _signal.signal, callable, isinstance, IndexError
    int_types = (int, signal_module.Handlers)
    handlers: dict[int, Any] = {}
    pending: list[int] = []

    sandbox_files = hook_files | {__file__}

    def in_hook(frame: Any) -> bool:
        """Whether the innermost run of sandbox frames (hook, encoder, wrappers) includes
        a hook frame, i.e. the signal interrupted the hook or something it called."""
        while frame is not None:
            name = frame.f_code.co_filename
            if name in hook_files:
                return True
            if name not in sandbox_files:
                return False
            frame = frame.f_back
        return False

    def flush() -> None:
        while pending:
            try:
                sig = pending.pop(0)
            except index_error:  # a signal during this flush flushed the rest itself
                return
            handler = handlers.get(sig)
            if handler is not None:
                handler(sig, None)

    def trampoline(sig: int, frame: Any) -> Any:
        if in_hook(frame):
            pending.append(sig)
            return None
        flush()
        handler = handlers.get(sig)
        return handler(sig, frame) if handler is not None else None

    int_, to_enum = int, getattr(signal_module, "_int_to_enum", lambda value, _: value)
    handlers_enum = signal_module.Handlers

    def wrapped(signalnum: Any, handler: Any) -> Any:
        # As ``signal.signal`` does: enum members (``SIGALRM``, ``SIG_DFL``) become the
        # plain ints the C function compares its constants with.
        signalnum = int_(signalnum)
        old = handlers.get(signalnum)
        if isinstance_(handler, int_types):
            previous = raw(signalnum, int_(handler))
            handlers.pop(signalnum, None)
        elif not callable_(handler):
            previous = raw(signalnum, handler)  # the C function's own error
        else:
            previous = raw(signalnum, trampoline)
            handlers[signalnum] = handler
        return old if previous is trampoline else to_enum(previous, handlers_enum)

    wrapped.__name__ = "signal"
    for module in (_signal, signal_module):
        setattr(module, "signal", wrapped)  # noqa: B010 - both modules, one wrapper
    return wrapped, flush


def guard_sqlite() -> list[Any]:
    """Hand every new sqlite connection to the audit hook (``spade.sqlite``), which puts an
    authorizer on it: ``ATTACH`` opens files natively, without an audit event."""
    import sqlite3
    import sqlite3.dbapi2

    raw, audit = sqlite3.connect, sys.audit

    def connect(*args: Any, **kwargs: Any) -> Any:
        conn = raw(*args, **kwargs)
        audit("spade.sqlite", conn)
        return conn

    connect.__name__ = "connect"
    for module in (sqlite3, sqlite3.dbapi2, sys.modules["_sqlite3"]):
        if getattr(module, "connect", None) is raw:
            module.connect = connect  # type: ignore[attr-defined]
    return [connect]


def guard_open_at(modules: list[Any]) -> list[Any]:
    """Make ``os.open(path, flags, dir_fd=fd)`` visible: the ``open`` audit event carries
    no ``dir_fd``, so the wrapper reports ``spade.dirfd`` (function, path, flags, dir_fd)
    for the hook to resolve the path against the directory it really names."""
    raw, audit = modules[0].open, sys.audit

    def open(path: Any, flags: Any, mode: Any = 0o777, *, dir_fd: Any = None) -> Any:
        if dir_fd is not None:
            audit("spade.dirfd", "open", path, flags, dir_fd)
        return raw(path, flags, mode, dir_fd=dir_fd)

    for module in modules:
        if getattr(module, "open", None) is raw:
            module.open = open
    return [open]


def guard_readlink(modules: list[Any]) -> list[Any]:
    """Make ``os.readlink`` visible (``os.readlink``, path and ``dir_fd``): it raises no
    audit event of its own, and a link the kernel refuses to read (another process's
    ``/proc/<pid>/fd``) would otherwise fail without naming the attempt."""
    raw, audit = modules[0].readlink, sys.audit

    def readlink(path: Any, *, dir_fd: Any = None) -> Any:
        audit("os.readlink", path, dir_fd)
        return raw(path, dir_fd=dir_fd)

    readlink.__name__ = "readlink"
    for module in modules:
        if getattr(module, "readlink", None) is raw:
            module.readlink = readlink
    return [readlink]


def guard_memfd(modules: list[Any]) -> list[Any]:
    """Name ``os.memfd_create`` (``spade.memfd``) before seccomp kills the worker for it:
    an anonymous file holds memory that the address-space limit does not count."""
    raw, audit = getattr(modules[0], "memfd_create", None), sys.audit
    if raw is None:
        return []

    def memfd_create(name: Any, flags: Any = 1) -> Any:
        audit("spade.memfd", name)
        return raw(name, flags)

    memfd_create.__name__ = "memfd_create"
    for module in modules:
        if getattr(module, "memfd_create", None) is raw:
            module.memfd_create = memfd_create
    return [memfd_create]


def guard_global_rng(modules: dict[str, Any]) -> list[Any]:
    """Report seeding of the process-wide generators (``random``'s and numpy's legacy one)
    through ``spade.rng``; the hook blames it on the environment only when environment
    code asked (a library seeding them on purpose, as RLVE does, is the library's).

    Instances must come from their own generator (``self.rng``); a seeded global one is
    shared with every other user in the process. This sees the seeding however it was
    reached (``getattr`` with a computed name included), not just the literal name.
    """
    import random

    audit, raw_seed, inst = sys.audit, random.Random.seed, getattr(random, "_inst")  # noqa: B009

    def seed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self is inst:
            audit("spade.rng", "random.seed")
        return raw_seed(self, *args, **kwargs)

    seed.__name__ = "seed"
    random.Random.seed = seed  # type: ignore[method-assign]
    random.seed = inst.seed
    wrappers: list[Any] = [seed]
    numpy_random = modules.get("numpy.random")
    if numpy_random is not None:
        raw_np = numpy_random.seed

        def np_seed(*args: Any, **kwargs: Any) -> Any:
            audit("spade.rng", "numpy.random.seed")
            return raw_np(*args, **kwargs)

        np_seed.__name__ = "seed"
        for name in ("numpy.random", "numpy.random.mtrand"):
            module = modules.get(name)
            if module is not None and getattr(module, "seed", None) is raw_np:
                module.seed = np_seed
        wrappers.append(np_seed)
    return wrappers
