"""Detection inside the worker: an audit hook that records AND blocks forbidden attempts.

The hook is installed after the runtime is imported and before environment code runs. It
is the only owner of the violation record and of the reply writer: the serving loop hands
replies to it through ``sys.audit("spade.reply", ...)`` and the hook stamps every frame it
writes with the violations seen so far. Environment code therefore cannot drop a report by
monkeypatching ``os``/``json``/builtins or by editing the loop's state; the hook function
itself is unreachable from Python once installed. Every name the hook and its reply writer use
is bound when it is built (closure cells, never module globals or builtins looked up at call
time), and it never calls environment-defined code (no ``repr``/``str``/``==`` on foreign
objects), so environment code never runs on top of the hook's frame. Whether an event is
the environment's or a library's being imported is decided in :mod:`._attribution`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

from spade.sandbox import _attribution, _wire

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
#: Modules that give native code access; importing them from environment code is a violation.
NATIVE_MODULES = _attribution.NATIVE_NAMES
NATIVE_PREFIXES = _attribution.NATIVE_PREFIXES
#: Attributes that hand out a frame; reaching a sandbox frame from environment code is
#: tampering (``sys._getframe`` is checked the same way).
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_READ_FILES = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
#: Module attributes whose replacement is reported (fooling the checker).
WATCHED = {
    "builtins": ("isinstance", "type", "len", "print", "open", "__import__", "repr", "str",
                 "int", "float", "bool", "tuple", "list", "dict", "getattr", "setattr",
                 "hasattr", "exec", "eval", "compile", "id", "hash", "super", "object",
                 "range", "iter", "next", "sorted", "min", "max", "sum", "abs", "round",
                 "memoryview", "bytes", "bytearray", "issubclass", "map", "all", "any",
                 "zip", "set", "frozenset", "enumerate", "filter", "callable", "vars"),
    "json": ("dumps", "loads", "dump", "load", "JSONEncoder", "JSONDecoder"),
    "sys": ("audit", "addaudithook", "exit"),
    "os": ("write", "read", "_exit", "kill", "getpid", "close", "dup2", "environ"),
    "posix": ("environ",),
    # What the import system uses to turn a library file into code objects (see
    # _attribution: a forged library file name must not pass for the real thing).
    "_frozen_importlib_external": (
        "_io", "_imp", "marshal", "_os", "_compile_bytecode", "_path_join", "_path_stat",
        "cache_from_source", "decode_source", "SourceFileLoader", "SourcelessFileLoader",
        "FileLoader", "SourceLoader", "_LoaderBasics", "FileFinder", "PathFinder",
        "_classify_pyc", "_validate_timestamp_pyc"),
    "_frozen_importlib": ("_call_with_frames_removed", "_load_unlocked", "_imp",
                          "_find_and_load", "module_from_spec"),
}  # fmt: skip


def watch_list(modules: dict[str, Any], classes: list[type]) -> list[tuple[Any, Any, Any]]:
    """(owner, attribute, current value) triples to re-check at every reply.

    Classes are watched whole (every attribute plus the attribute count): a second line
    behind the ``object.__setattr__`` audit event, which a library being imported may use.
    """
    out: list[tuple[Any, Any, Any]] = []
    for module_name, names in WATCHED.items():
        module = modules[module_name]
        out += [(module, name, module.__dict__.get(name)) for name in names]
    for cls in classes:
        out += [(cls, name, value) for name, value in list(cls.__dict__.items())]
        out.append((cls, None, len(cls.__dict__)))
    return out


def make_hook(
    *,
    tmp_dir: str,
    read_roots: Iterable[str],
    library_roots: Iterable[str],
    sandbox_dirs: Iterable[str],
    control_fds: Iterable[int],
    reply_fd: int,
    write: Callable[[int, Any], int],
    protected: tuple[Any, ...],
    preexisting_types: tuple[type, ...],
    watched: list[tuple[Any, str, Any]],
    reply_codes: tuple[Any, ...],
    worker_codes: tuple[Any, ...],
    key: bytes,
    max_records: int = 50,
) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook (call ``sys.addaudithook`` on the result, then drop it).

    ``protected``: objects environment code may not inspect or change (their ids are
    compared; the tuple keeps them alive). ``preexisting_types``: every class that existed
    before the worker forked (kept alive, so an id never stands for a newer class).
    ``reply_codes``: code objects that may send replies; ``worker_codes``: code objects
    that may look at sandbox frames. The hook is assembled from named parts, each a closure
    over its own bound state: the reporter (violation record and reply writer), the path
    checks, the tamper check, the per-event handlers and the re-entrancy guard.
    """
    attribution = _attribution.make_attribution(library_roots, sandbox_dirs, tmp_dir)
    record, deny, send = _make_reporter(reply_fd, write, max_records, _wire.make_sealer(key))
    fds = frozenset(control_fds)
    paths = _make_path_checks(tmp_dir, read_roots, fds, deny, record, attribution[0])
    check_watched = _make_tamper_check(watched, record)
    handlers = _make_handlers(
        attribution, paths, deny, record, send, check_watched, fds,
        keep=(protected, preexisting_types, reply_codes, worker_codes),
    )  # fmt: skip
    return _make_entry(handlers)


def _make_reporter(
    reply_fd: int, write: Callable[[int, Any], int], max_records: int,
    seal: Callable[[bytes], bytes],
) -> tuple[Callable[..., Any], ...]:  # fmt: skip
    """``(record, deny, send)``: the only owner of the violation record and the reply fd.

    Every frame is sealed (``seal``: a keyed tag over its sequence number), so the parent
    rejects frames that anything else in the worker writes to the pipe.

    Counting a violation and writing its report happen under one lock, so a reply never
    claims a violation whose report has not been written yet.
    """
    import _thread
    import struct

    encode = _wire.make_encoder()
    header = struct.Struct(">I").pack
    lock = _thread.allocate_lock()
    len_, memoryview_, suppress_, os_error = len, memoryview, suppress, OSError
    permission_error = PermissionError
    records: list[list[str]] = []
    count = [0, 0]  # violations recorded, records already sent

    def send_locked(message: list[Any]) -> None:
        """Stamp ``message`` with the violations so far and write it (``lock`` held)."""
        message[3] = count[0]
        message[4] = records[count[1] :]
        count[1] = len_(records)
        body = seal(encode(message).encode("utf-8", "surrogatepass"))
        frame = header(len_(body)) + body
        sent = write(reply_fd, frame)  # one write: the pipe takes a whole small frame
        if sent != len_(frame):
            view = memoryview_(frame)[sent:]
            while view:
                view = view[write(reply_fd, view) :]

    def send(message: list[Any]) -> None:
        with lock:
            send_locked(message)

    def record(category: str, detail: str) -> None:
        with lock:  # count, record and report in one step (threads may record too)
            count[0] += 1
            if len_(records) < max_records:
                records.append([category, detail[:300]])
            with suppress_(os_error):  # the next reply carries the record too
                send_locked(["v", 0, None, 0, None, None])

    def deny(category: str, detail: str) -> None:
        record(category, detail)
        raise permission_error(f"sandbox: {category} access is not allowed ({detail})")

    return record, deny, send


def _text(value: Any, _str: Any = str, _bytes: Any = bytes, _int: Any = int,
          _tuple: Any = tuple, _list: Any = list, _type: Any = type) -> str:  # fmt: skip
    """A short rendering of an event argument that never calls foreign code (identity
    tests only: ``==`` or ``in`` could run an environment-defined ``__eq__``)."""
    kind = _type(value)
    if kind is _str:
        return value[:200]
    if kind is _bytes:
        return _bytes.decode(value, "utf-8", "surrogateescape")[:200]
    if kind is _int:
        return _str(value)
    if kind is _tuple or kind is _list:
        return "(" + ", ".join([_text(v) for v in value[:6]]) + ")"
    return "<" + _type.__dict__["__name__"].__get__(kind) + ">"


def _make_realpath() -> Callable[[str], str]:
    """``os.path.realpath`` of an absolute path with bound C functions only."""
    import posix
    from _stat import S_ISLNK

    lstat, readlink, os_error, value_error = posix.lstat, posix.readlink, OSError, ValueError

    def realpath(path: str) -> str:
        todo = [p for p in path.split("/")[::-1] if p]
        done, links = "", 0
        while todo:
            part = todo.pop()
            if part == ".":
                continue
            if part == "..":
                done = done[: done.rfind("/")]
                continue
            candidate = done + "/" + part
            try:
                link = S_ISLNK(lstat(candidate).st_mode) and links < 40
                target = readlink(candidate) if link else ""
            except (os_error, value_error):
                link = False
            if not link:
                done = candidate
                continue
            links += 1
            if target.startswith("/"):
                done = ""
            todo += [p for p in target.split("/")[::-1] if p]
        return done or "/"

    return realpath


#: Where events name a ``dir_fd``: event -> ((path index, dir_fd index), ...).
_DIR_FD_ARGS = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),), "os.utime": ((0, 3),),
    "os.mkfifo": ((0, 2),), "os.mknod": ((0, 3),), "os.fwalk": ((0, 4),),
    "spade.dirfd": ((1, 3),),
}  # fmt: skip
_SQLITE_ATTACH = 24
_SQLITE_DENY = 1


def _make_path_checks(
    tmp_dir: str, read_roots: Iterable[str], fds: frozenset[int],
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
    by_env: Callable[[Any], bool],
) -> dict[str, Callable[..., Any]]:  # fmt: skip
    """Path checks for the hook: open, list/read, write, ``dir_fd``, sqlite files.

    What a library does while it is being imported (matplotlib scanning font directories,
    torch reading ``/proc/self/maps``) is refused the same way but not recorded against
    the environment: the import is not the environment's doing. Reading the worker's own
    ``/proc/<pid>`` files (not its fds, memory or environment) is ordinary.

    A relative path is resolved against its ``dir_fd`` (through ``/proc/self/fd``) when the
    call names one, else against the working directory. sqlite's own file access (the
    ``ATTACH`` statement, which raises no audit event) is checked by an authorizer the hook
    puts on every connection; Landlock is what stops it when that is removed.
    """
    import posix

    realpath, getcwd, readlink = _make_realpath(), posix.getcwd, posix.readlink
    tmp_prefix = tmp_dir.rstrip("/") + "/"
    roots = tuple(sorted({r.rstrip("/") + "/" for r in read_roots if r}))
    read_prefixes, tmp_only = (tmp_prefix, *roots), (tmp_prefix,)
    own_proc = f"/proc/{posix.getpid()}/"
    own_proc_hidden = tuple(own_proc + p for p in ("fd", "fdinfo", "mem", "environ", "map_files"))
    permission_error = PermissionError
    typeof, str_, bytes_, int_, any_, len_ = type, str, bytes, int, any, len
    bdecode, text, os_error = bytes.decode, _text, OSError
    write_flags, read_files, dir_fd_args = _WRITE_FLAGS, _READ_FILES, _DIR_FD_ARGS
    connection_type = sys.modules["sqlite3"].Connection
    mro_of = type.__dict__["__mro__"].__get__
    set_authorizer = connection_type.set_authorizer

    def base_of(dir_fd: Any) -> str | None:
        """The directory a ``dir_fd`` stands for (None: no dir_fd given)."""
        if typeof(dir_fd) is not int_ or dir_fd < 0:
            return None
        try:
            return readlink(f"/proc/self/fd/{dir_fd}")
        except os_error:
            return "/proc/self/fd/" + str_(dir_fd)  # unknown: outside everything

    def resolve(path: Any, dir_fd: Any = None) -> str | None:
        kind = typeof(path)
        if kind is bytes_:
            path = bdecode(path, "utf-8", "surrogateescape")
        elif kind is not str_:
            return None
        if not path.startswith("/"):
            base = base_of(dir_fd)
            path = (getcwd() if base is None else base) + "/" + path
        return realpath(path)

    def inside(path: str, prefixes: tuple[str, ...]) -> bool:
        return path.startswith(prefixes) or path + "/" in prefixes

    def may_read(path: str) -> bool:
        return path in read_files or inside(path, read_prefixes) or (
            path.startswith(own_proc) and not path.startswith(own_proc_hidden)
        )

    def refuse(category: str, detail: str, caller: Any) -> None:
        if caller is not None and not by_env(caller()):
            raise permission_error(f"sandbox: {category} access is not allowed ({detail})")
        deny(category, detail)

    def may_write(path: str) -> bool:
        return inside(path, tmp_only) or path == "/dev/null"

    def check_open(args: tuple[Any, ...], dir_fd: Any = None, caller: Any = None) -> None:
        path, mode, flags = ((*args, None, None, None))[:3]
        if typeof(path) is int_:
            if path in fds:
                deny("tampering", f"open of the sandbox control fd {path}")
            return
        real = resolve(path, dir_fd)
        if real is None:
            refuse("filesystem", f"open of a path given as {text(path)}", caller)
            return
        writing = (typeof(flags) is int_ and flags & write_flags) or (
            typeof(mode) is str_ and any_([c in mode for c in "wax+"])
        )
        if writing and not may_write(real):
            refuse("filesystem", f"open for writing {real}", caller)
        elif not writing and not may_read(real):
            refuse("filesystem", f"open {real}", caller)

    def check_paths(event: str, args: tuple[Any, ...], writing: bool, caller: Any = None) -> None:
        pairs = dict(dir_fd_args.get(event, ()))
        for index, arg in enumerate(args):
            if typeof(arg) is int_ and arg in fds:
                deny("tampering", f"{event} on the sandbox control fd {arg}")
            dir_fd = args[pairs[index]] if index in pairs and pairs[index] < len_(args) else None
            real = resolve(arg, dir_fd)
            if real is None:
                if typeof(arg) is int_ and index == 0 and not writing:
                    real = base_of(arg)  # os.listdir(fd), os.scandir(fd)
                if real is None:
                    continue
            if not (may_write(real) if writing else may_read(real)):
                refuse("filesystem", f"{event} {real}", caller)

    def check_dir_fd(args: tuple[Any, ...]) -> None:
        """``spade.dirfd``: (function, path, flags, dir_fd) from the wrapped ``os.open``."""
        if len_(args) == 4:
            check_open((args[1], None, args[2]), args[3])

    def sqlite_target(path: Any) -> str | None:
        """The file a sqlite database name stands for (None: in memory, or temporary)."""
        if typeof(path) is bytes_:
            path = bdecode(path, "utf-8", "surrogateescape")
        if typeof(path) is not str_:
            return "<" + text(path) + ">"
        if path.startswith("file:"):
            path = path[5:].split("?", 1)[0].split("#", 1)[0]
            if path.startswith("//"):
                path = "/" + path[2:].split("/", 1)[-1]
        if path in ("", ":memory:") or path.startswith(":memory:"):
            return None
        return resolve(path)

    def check_sqlite(path: Any) -> None:
        real = sqlite_target(path)
        if real is not None and not may_write(real):
            deny("filesystem", f"sqlite3.connect {real}")

    def authorize(action: Any, arg1: Any, *_: Any) -> int:
        if action == _SQLITE_ATTACH:
            real = sqlite_target(arg1) if arg1 is not None else "(a file named by a parameter)"
            if real is not None and not may_write(real):
                record("filesystem", f"sqlite ATTACH {real}")
                return _SQLITE_DENY
        return 0

    def guard_sqlite(conn: Any) -> None:
        """``spade.sqlite``: a connection the wrapped ``sqlite3.connect`` just made."""
        if any_([c is connection_type for c in mro_of(typeof(conn))]):
            set_authorizer(conn, authorize)

    return {"open": check_open, "paths": check_paths, "dirfd": check_dir_fd,
            "sqlite": check_sqlite, "sqlite_handle": guard_sqlite}  # fmt: skip


def _make_tamper_check(
    watched: list[tuple[Any, str, Any]], record: Callable[[str, str], None]
) -> Callable[[], None]:
    """The per-reply check that watched attributes still hold their startup values.

    The hot path (every reply): one C-level itemgetter per owner, one identity pass over
    all watched values, and the attribute counts of the watched classes.
    """
    import itertools
    import operator

    chain = itertools.chain.from_iterable
    is_, all_, map_, len_, zip_, tuple_ = operator.is_, all, map, len, zip, tuple
    idof, typeof, module_type, key_error = id, type, type(sys), KeyError
    type_qualname = type.__dict__["__qualname__"].__get__
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
    labels = {i: o.__name__ if typeof(o) is module_type else type_qualname(o)
              for i, o in owners.items()}  # fmt: skip
    dicts = {i: o.__dict__ for i, o in owners.items()}
    reported: set[str] = set()

    def unchanged() -> bool:
        try:
            now = [get(mapping) for mapping, get in getters]
        except key_error:
            return False
        return all_(map_(is_, chain(now), snapshot)) and tuple_(
            map_(len_, class_maps)
        ) == class_sizes

    def check_watched() -> None:
        if unchanged():
            return
        for ident, now in dicts.items():
            pairs = zip_(names_of[ident], values_of[ident], strict=True)
            changed = [n for n, v in pairs if now.get(n) is not v]
            if class_size.get(ident, len_(now)) != len_(now):
                changed.append("(new attribute)")
            for name in changed:
                key = labels[ident] + "." + name
                if key not in reported:
                    reported.add(key)
                    record("tampering", f"replaced {key}")

    return check_watched


def _make_handlers(
    attribution: tuple[Callable[..., Any], ...], paths: dict[str, Callable[..., Any]],
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
    send: Callable[[list[Any]], None], check_watched: Callable[[], None],
    fds: frozenset[int], keep: tuple[tuple[Any, ...], ...],
) -> tuple[dict[str, Callable[..., Any]], Callable[..., Any]]:  # fmt: skip
    """``(exact, fallback)``: one handler per event name, and one for event families.

    Every handler gets ``(event, args, caller)``, ``caller`` being a function that returns
    the frame of the code that raised the event (only called when it matters).
    """
    (by_env, asked_by_library, check_compile, check_marshal, note_exec, set_env_file,
     sandbox_frame) = attribution  # fmt: skip
    idof, typeof, len_, getattr_, str_, list_, int_ = id, type, len, getattr, str, list, int
    runtime_error, permission_error, text = RuntimeError, PermissionError, _text
    type_qualname = type.__dict__["__qualname__"].__get__
    protected_ids, preexisting_ids, reply_ids, worker_ids = (
        frozenset(map(idof, group)) for group in keep)  # fmt: skip
    native, native_prefixes, frame_attrs = NATIVE_MODULES, NATIVE_PREFIXES, _FRAME_ATTRS
    types_module = sys.modules["types"]
    frame_holders = (types_module.TracebackType, types_module.GeneratorType,
                     types_module.CoroutineType, types_module.AsyncGeneratorType)  # fmt: skip
    any_, frame_type = any, types_module.FrameType
    check_open, check_paths = paths["open"], paths["paths"]
    coroutine_ids = frozenset({idof(sys.modules["types"].coroutine.__code__)})
    modules = sys.modules

    def on_reply(event: str, args: tuple[Any, ...], caller: Any) -> None:
        message: Any = args[0] if len_(args) == 1 else None
        if idof(caller().f_code) not in reply_ids:
            deny("tampering", "a reply sent by environment code")
        if typeof(message) is not list_ or len_(message) != 6:
            raise runtime_error("sandbox: malformed reply")
        check_watched()
        send(message)

    def on_import(event: str, args: tuple[Any, ...], caller: Any) -> None:
        name: Any = args[0] if args else None
        if typeof(name) is not str_:
            return
        if name in native or name.startswith(native_prefixes):
            if by_env(caller()):
                deny("native", f"import {name}")
        elif name == "spade.sandbox" or name.startswith("spade.sandbox."):
            deny("tampering", f"import {name}")
        elif name in ("_signal", "signal") and name not in modules and by_env(caller()):
            deny("tampering", f"a fresh import of {name} (the sandbox's signal wrapper)")

    def on_environ(event: str, args: tuple[Any, ...], caller: Any) -> None:
        frame = caller()
        if len_(args) == 2 and by_env(frame) and not asked_by_library(frame):
            op, key = args
            if typeof(op) is str_ and op == "list":
                record("environment", "enumeration of os.environ")
            else:
                record("environment", f"read of os.environ[{text(key)!r}]")

    def on_code_new(event: str, args: tuple[Any, ...], caller: Any) -> None:
        # Hand-made bytecode can corrupt memory, so environment code may not build code
        # objects; a library doing it while imported (asyncio's ``@types.coroutine``) and
        # ``types.coroutine`` itself (it only sets a flag) are ordinary.
        frame = caller()
        if idof(frame.f_code) in coroutine_ids or not by_env(frame):
            return
        deny("tampering", event)

    def on_rng(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if not asked_by_library(caller()):
            record("rng", f"{text(args[0]) if args else 'a global generator'} seeds the "
                   "process-wide generator (use self.rng or a generator of your own)")  # fmt: skip

    def on_tamper(event: str, args: tuple[Any, ...], caller: Any) -> None:
        deny("tampering", event)

    def on_addaudithook(event: str, args: tuple[Any, ...], caller: Any) -> None:
        record("tampering", event)
        raise runtime_error("sandbox: adding audit hooks is not allowed")

    def on_getframe(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if (args and typeof(args[0]) is frame_type and sandbox_frame(args[0])
                and idof(caller().f_code) not in worker_ids):  # fmt: skip
            deny("tampering", "sys._getframe reaching the sandbox's own frames")

    def on_signal(event: str, args: tuple[Any, ...], caller: Any) -> None:
        deny("signal", f"{event} {text(args)}")

    def on_fcntl(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if args and typeof(args[0]) is int_ and args[0] in fds:
            deny("tampering", f"{event} on the sandbox control fd {args[0]}")

    def on_attr(event: str, args: tuple[Any, ...], caller: Any) -> None:
        target = args[0]
        if idof(target) in protected_ids:
            deny("tampering", f"{event} {text(args[1])} on a sandbox object")
        elif event == "object.__getattr__":
            name = args[1]
            if (typeof(name) is str_ and name in frame_attrs
                    and any_([typeof(target) is t for t in frame_holders])
                    and sandbox_frame(getattr_(target, name, None))
                    and idof(caller().f_code) not in worker_ids):  # fmt: skip
                deny("tampering", f"{name} reaching the sandbox's own frames")
        elif idof(target) in preexisting_ids and by_env(caller()):
            name = type_qualname(target)
            deny("tampering", f"modifying attribute {text(args[1])} of {text(name)}")

    exact: dict[str, Callable[..., Any]] = {
        "spade.reply": on_reply,
        "open": lambda e, a, c: check_open(a, None, c),
        "import": on_import,
        "compile": lambda e, a, c: check_compile(a[1] if len_(a) > 1 else None, c()),
        "marshal.loads": lambda e, a, c: check_marshal(c()),
        "exec": lambda e, a, c: note_exec(a[0], c()) if a else None,
        "spade.environ": on_environ,
        "spade.envfile": lambda e, a, c: set_env_file(a[0] if a else None),
        "spade.fd": lambda e, a, c: deny(
            "tampering", f"os.{text(a[0])} on the sandbox control fd {text(a[1])}"),
        "spade.dirfd": lambda e, a, c: paths["dirfd"](a),
        "sqlite3.connect": lambda e, a, c: paths["sqlite"](a[0] if a else None),
        "spade.sqlite": lambda e, a, c: paths["sqlite_handle"](a[0]) if a else None,
        "code.__new__": on_code_new,
        "spade.resource": lambda e, a, c: record("resource", text(a[0]) if a else "?"),
        "spade.rng": on_rng,
        "sys.addaudithook": on_addaudithook,
        "sys._getframe": on_getframe,
    }
    for name in _LIST_EVENTS:
        exact[name] = lambda e, a, c: check_paths(e, a, False, c)
    for name in _WRITE_EVENTS - {"sqlite3.connect"}:
        exact[name] = lambda e, a, c: check_paths(e, a, True, c)
    def on_process(event: str, args: tuple[Any, ...], caller: Any) -> None:
        detail = f"{event} {text(args[:2])}"
        if not by_env(caller()):  # a library probing for a tool while it is imported
            raise permission_error(f"sandbox: process access is not allowed ({detail})")
        deny("process", detail)

    for name in _PROCESS_EVENTS:
        exact[name] = on_process
    for name in _SIGNAL_EVENTS:
        exact[name] = on_signal
    for name in _TAMPER_EVENTS - {"sys.addaudithook", "code.__new__"}:
        exact[name] = on_tamper
    for name in ("fcntl.fcntl", "fcntl.ioctl", "fcntl.flock", "fcntl.lockf"):
        exact[name] = on_fcntl
    for name in ("object.__setattr__", "object.__delattr__", "object.__getattr__"):
        exact[name] = on_attr
    network_prefixes = _NETWORK_PREFIXES

    def fallback(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if event == "socket.__new__" and len_(args) > 1 and typeof(args[1]) is int_ \
                and args[1] == 1:  # fmt: skip
            return  # AF_UNIX: socketpair() is a pipe; connect/bind are still refused
        if event.startswith(network_prefixes):
            deny("network", f"{event} {text(args[1:] if event == 'socket.connect' else args)}")
        elif event.startswith("ctypes.") and by_env(caller()):
            deny("native", f"{event} (ctypes)")

    return exact, fallback


def _make_entry(
    handlers: tuple[dict[str, Callable[..., Any]], Callable[..., Any]],
) -> Callable[[str, tuple[Any, ...]], None]:
    """The hook itself: dispatch by event name, never re-entered by environment code.

    Events raised by the hook's own work (a frame lookup) are ignored on the same thread.
    Environment code that could otherwise run on top of the hook's frame and edit its state
    is kept out: the cyclic garbage collector (``__del__``, weakref callbacks) is paused
    while the hook runs, and Python signal handlers go through :func:`guard_signals`, which
    defers a signal that arrives during the hook until it returns.
    """
    import _thread
    import gc

    exact, fallback = handlers
    families = (*_NETWORK_PREFIXES, "ctypes.")  # what ``fallback`` looks at
    get_ident, getframe, busy = _thread.get_ident, sys._getframe, set()
    typeof, str_, tuple_, lookup = type, str, tuple, exact.get
    gc_enabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable

    def caller() -> Any:
        # Frames: 0 caller, 1 handler, 2 hook, 3 the code that caused the event.
        return getframe(3)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if typeof(event) is not str_ or typeof(args) is not tuple_:
            return
        handler = lookup(event)
        if handler is None and not event.startswith(families):
            return  # most events (every import's details, object creation, ...) are no one's
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        collecting = gc_enabled()
        if collecting:
            gc_disable()
        try:
            if handler is not None:
                handler(event, args, caller)
            else:
                fallback(event, args, caller)
        finally:
            if collecting:
                gc_enable()
            busy.discard(tid)

    return hook
