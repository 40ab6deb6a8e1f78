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
    max_records: int = 50,
) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook (call ``sys.addaudithook`` on the result, then drop it).

    ``protected``: objects environment code may not inspect or change (their ids are
    compared; the tuple keeps them alive). ``preexisting_types``: every class that existed
    before the worker forked (kept alive, so an id never stands for a newer class).
    ``reply_codes``: code objects that may send replies; ``worker_codes``: code objects
    that may look at sandbox frames.
    """
    import _thread
    import posix
    import struct
    from _stat import S_ISLNK

    (by_env, asked_by_library, check_compile, check_marshal, note_exec, set_env_file,
     sandbox_frame) = _attribution.make_attribution(library_roots, sandbox_dirs, tmp_dir)
    encode = _wire.make_encoder()
    tmp_prefix = tmp_dir.rstrip("/") + "/"
    roots = tuple(sorted({r.rstrip("/") + "/" for r in read_roots if r}))
    read_prefixes = (tmp_prefix, *roots)
    tmp_only = (tmp_prefix,)
    fds = frozenset(control_fds)
    lstat, readlink, getcwd = posix.lstat, posix.readlink, posix.getcwd
    get_ident, lock, getframe = _thread.get_ident, _thread.allocate_lock(), sys._getframe
    header = struct.Struct(">I").pack
    idof, typeof, len_, memoryview_, any_, getattr_ = id, type, len, memoryview, any, getattr
    str_, bytes_, int_, tuple_, list_ = str, bytes, int, tuple, list
    bdecode, join = bytes.decode, ", ".join
    type_name = type.__dict__["__name__"].__get__
    type_qualname = type.__dict__["__qualname__"].__get__
    permission_error, runtime_error, os_error = PermissionError, RuntimeError, OSError
    value_error, key_error, suppress_ = ValueError, KeyError, suppress
    network_prefixes, process_events, signal_events = (
        _NETWORK_PREFIXES, _PROCESS_EVENTS, _SIGNAL_EVENTS)  # fmt: skip
    tamper_events, write_events, list_events = _TAMPER_EVENTS, _WRITE_EVENTS, _LIST_EVENTS
    native, native_prefixes, frame_attrs = NATIVE_MODULES, NATIVE_PREFIXES, _FRAME_ATTRS
    write_flags, read_files = _WRITE_FLAGS, _READ_FILES
    fcntl_events = frozenset({"fcntl.fcntl", "fcntl.ioctl", "fcntl.flock", "fcntl.lockf"})
    attr_events = frozenset({"object.__setattr__", "object.__delattr__", "object.__getattr__"})
    keep = (protected, preexisting_types, reply_codes, worker_codes)  # ids stay valid
    protected_ids = frozenset(map(idof, keep[0]))
    preexisting_ids = frozenset(map(idof, keep[1]))
    reply_ids = frozenset(map(idof, keep[2]))
    worker_ids = frozenset(map(idof, keep[3]))
    records: list[list[str]] = []
    count = [0, 0]  # violations recorded, records already sent
    reported_watch: set[str] = set()
    busy: set[int] = set()

    def send_locked(message: list[Any]) -> None:
        """Stamp ``message`` with the violations so far and write it (``lock`` held)."""
        message[3] = count[0]
        message[4] = records[count[1] :]
        count[1] = len_(records)
        body = encode(message).encode("utf-8", "surrogatepass")
        view = memoryview_(header(len_(body)) + body)
        while view:
            view = view[write(reply_fd, view) :]

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

    def text(value: Any) -> str:
        kind = typeof(value)
        if kind is str_:
            return value[:200]
        if kind is bytes_:
            return bdecode(value, "utf-8", "surrogateescape")[:200]
        if kind is int_:
            return str_(value)
        if kind is tuple_ or kind is list_:
            return "(" + join([text(v) for v in value[:6]]) + ")"
        return "<" + type_name(kind) + ">"

    def realpath(path: str) -> str:
        """``os.path.realpath`` of an absolute path with bound C functions only."""
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

    def resolve(path: Any) -> str | None:
        kind = typeof(path)
        if kind is bytes_:
            path = bdecode(path, "utf-8", "surrogateescape")
        elif kind is not str_:
            return None
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        return realpath(path)

    def inside(path: str, prefixes: tuple[str, ...]) -> bool:
        return path.startswith(prefixes) or path + "/" in prefixes

    def may_read(path: str) -> bool:
        return path in read_files or inside(path, read_prefixes)

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
        writing = (typeof(flags) is int_ and flags & write_flags) or (
            typeof(mode) is str_ and any_([c in mode for c in "wax+"])
        )
        if writing and not (inside(real, tmp_only) or real == "/dev/null"):
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
            if not (inside(real, tmp_only) if writing else may_read(real)):
                deny("filesystem", f"{event} {real}")

    # The hot path (every reply): one C-level itemgetter per owner, one identity pass over
    # all watched values, and the attribute counts of the watched classes.
    operator = __import__("operator")
    chain = __import__("itertools").chain.from_iterable
    is_, all_, map_, module_type, zip_ = operator.is_, all, map, typeof(sys), zip
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
                if key not in reported_watch:
                    reported_watch.add(key)
                    record("tampering", f"replaced {key}")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        tid = get_ident()
        if tid in busy or typeof(event) is not str_ or typeof(args) is not tuple_:
            return
        busy.add(tid)
        try:
            dispatch(event, args)
        finally:
            busy.discard(tid)

    def dispatch(event: Any, args: tuple[Any, ...]) -> None:
        # Frames: 0 dispatch, 1 hook, 2 the code that caused the event.
        if event == "spade.reply":
            message: Any = args[0] if len_(args) == 1 else None
            if idof(getframe(2).f_code) not in reply_ids:
                deny("tampering", "a reply sent by environment code")
            if typeof(message) is not list_ or len_(message) != 6:
                raise runtime_error("sandbox: malformed reply")
            check_watched()
            with lock:
                send_locked(message)
        elif event == "open":
            check_open(args)
        elif event == "import":
            name: Any = args[0] if args else None
            if typeof(name) is not str_:
                return
            if name in native or name.startswith(native_prefixes):
                if by_env(getframe(2)):
                    deny("native", f"import {name}")
            elif name == "spade.sandbox" or name.startswith("spade.sandbox."):
                deny("tampering", f"import {name}")
        elif event == "compile":
            check_compile(args[1] if len_(args) > 1 else None, getframe(2))
        elif event == "marshal.loads":
            check_marshal(getframe(2))
        elif event == "exec":
            if args:
                note_exec(args[0], getframe(2))
        elif event == "spade.environ":
            caller = getframe(2)
            if len_(args) == 2 and by_env(caller) and not asked_by_library(caller):
                op, key = args
                if op == "list":
                    record("environment", "enumeration of os.environ")
                else:
                    record("environment", f"read of os.environ[{text(key)!r}]")
        elif event == "spade.envfile":
            set_env_file(args[0] if args else None)
        elif event == "spade.fd":
            deny("tampering", f"os.{text(args[0])} on the sandbox control fd {text(args[1])}")
        elif event in list_events:
            check_paths(event, args, writing=False)
        elif event in write_events:
            check_paths(event, args, writing=True)
        elif event.startswith(network_prefixes):
            deny("network", f"{event} {text(args[1:] if event == 'socket.connect' else args)}")
        elif event in process_events:
            deny("process", f"{event} {text(args[:2])}")
        elif event in signal_events:
            deny("signal", f"{event} {text(args)}")
        elif event.startswith("ctypes."):
            if by_env(getframe(2)):
                deny("native", f"{event} (ctypes)")
        elif event in tamper_events:
            if event == "sys.addaudithook":
                record("tampering", event)
                raise runtime_error("sandbox: adding audit hooks is not allowed")
            deny("tampering", event)
        elif event == "sys._getframe":
            if args and sandbox_frame(args[0]) and idof(getframe(2).f_code) not in worker_ids:
                deny("tampering", "sys._getframe reaching the sandbox's own frames")
        elif event in fcntl_events:
            if args and typeof(args[0]) is int_ and args[0] in fds:
                deny("tampering", f"{event} on the sandbox control fd {args[0]}")
        elif event in attr_events:
            target = args[0]
            if idof(target) in protected_ids:
                deny("tampering", f"{event} {text(args[1])} on a sandbox object")
            elif event == "object.__getattr__":
                name = args[1]
                if (typeof(name) is str_ and name in frame_attrs
                        and sandbox_frame(getattr_(target, name, None))
                        and idof(getframe(2).f_code) not in worker_ids):  # fmt: skip
                    deny("tampering", f"{name} reaching the sandbox's own frames")
            elif idof(target) in preexisting_ids and by_env(getframe(2)):
                name = type_qualname(target)
                deny("tampering", f"modifying attribute {text(args[1])} of {text(name)}")

    return hook
