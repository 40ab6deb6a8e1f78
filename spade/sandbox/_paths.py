"""Path checks for the worker's hook: opens, listings, writes, ``dir_fd`` calls, sqlite files.

What a library does while it is being imported (matplotlib scanning font directories,
torch reading ``/proc/self/maps``) is refused the same way but not recorded against the
environment: the import is not the environment's doing. Reading the worker's own
``/proc/<pid>`` files (not its fds, memory or environment) is ordinary.

A relative path is resolved against its ``dir_fd`` (through ``/proc/self/fd``) when the
call names one, else against the working directory. sqlite's own file access (the
``ATTACH`` statement, which raises no audit event) is checked by an authorizer the hook
puts on every connection; Landlock is what stops it when that is removed. Every name is
bound when the checks are built, and nothing here calls code the environment defined.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from spade.sandbox import _events


def make_realpath() -> Callable[[str], str]:
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


def make_path_text() -> Callable[[Any], str | None]:
    """``path_text(path)``: the text of a path argument, whatever type names it, without
    running code the environment defined; None when it cannot be known (fail closed).

    ``str`` and ``bytes`` and their subclasses (``numpy.str_``, a ``StrEnum``, a subclass
    that overrides ``__str__``) are read by content through the base type's own C methods;
    the standard library's own path classes (``pathlib.PosixPath`` exactly, not a
    subclass) through their ``__fspath__``. Anything else is None."""
    import pathlib
    import posix

    typeof, str_, bytes_, any_ = type, str, bytes, any
    to_str, bdecode, fspath = str.__str__, bytes.decode, posix.fspath
    mro_of = type.__dict__["__mro__"].__get__
    posix_path, pure_posix_path = pathlib.PosixPath, pathlib.PurePosixPath
    base_error = BaseException

    def path_text(path: Any) -> str | None:
        kind = typeof(path)
        if kind is str_:
            return path
        if kind is bytes_:
            return bdecode(path, "utf-8", "surrogateescape")
        if kind is posix_path or kind is pure_posix_path:  # never ``==`` on a class
            try:
                path = fspath(path)
            except base_error:
                return None
            kind = typeof(path)
        mro = mro_of(kind)
        if any_([c is str_ for c in mro]):
            return to_str(path)
        if any_([c is bytes_ for c in mro]):
            return bdecode(path, "utf-8", "surrogateescape")
        return None

    return path_text


def make_resolver() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(base_of, resolve)``: the directory a ``dir_fd`` names, and the real absolute path
    of a ``str``/``bytes`` path (relative to its ``dir_fd`` or the working directory)."""
    import posix

    realpath, getcwd, readlink = make_realpath(), posix.getcwd, posix.readlink
    typeof, str_, int_ = type, str, int
    path_text, os_error = make_path_text(), OSError

    def base_of(dir_fd: Any) -> str | None:
        """The directory a ``dir_fd`` stands for (None: no dir_fd given)."""
        if typeof(dir_fd) is not int_ or dir_fd < 0:
            return None
        try:
            return readlink(f"/proc/self/fd/{dir_fd}")
        except os_error:
            return "/proc/self/fd/" + str_(dir_fd)  # unknown: outside everything

    def resolve(path: Any, dir_fd: Any = None, follow: bool = True) -> str | None:
        """``follow=False``: the last component is not followed (``readlink``)."""
        if typeof(path) is int_:
            return None
        path = path_text(path)
        if path is None:
            return None
        if not path.startswith("/"):
            base = base_of(dir_fd)
            path = (getcwd() if base is None else base) + "/" + path
        if follow:
            return realpath(path)
        parent, _, last = path.rstrip("/").rpartition("/")
        if last in ("", ".", ".."):
            return realpath(path)
        return realpath(parent or "/").rstrip("/") + "/" + last

    return base_of, resolve


def make_access_rules(
    tmp_dir: str, read_roots: Iterable[str]
) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """``(may_read, may_write)`` for a real absolute path: reads of the tmp, the runtime
    roots, a few devices and the worker's own ``/proc/<pid>`` files; writes of the tmp and
    ``/dev/null`` only."""
    import posix

    tmp_prefix = tmp_dir.rstrip("/") + "/"
    roots = tuple(sorted({r.rstrip("/") + "/" for r in read_roots if r}))
    read_prefixes, tmp_only = (tmp_prefix, *roots), (tmp_prefix,)
    own_proc = f"/proc/{posix.getpid()}/"
    own_proc_hidden = tuple(own_proc + p for p in ("fd", "fdinfo", "mem", "environ", "map_files"))
    read_files = _events.READ_FILES

    def inside(path: str, prefixes: tuple[str, ...]) -> bool:
        return path.startswith(prefixes) or path + "/" in prefixes

    def may_read(path: str) -> bool:
        return path in read_files or inside(path, read_prefixes) or (
            path.startswith(own_proc) and not path.startswith(own_proc_hidden)
        )

    def may_write(path: str) -> bool:
        return inside(path, tmp_only) or path == "/dev/null"

    return may_read, may_write


def make_path_checks(
    tmp_dir: str, read_roots: Iterable[str], fds: frozenset[int],
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
    by_env: Callable[[Any], bool],
) -> dict[str, Callable[..., Any]]:  # fmt: skip
    """The hook's path checks by event: ``open``, ``paths`` (list/read/write events),
    ``dirfd``, ``shared_fd`` (locks and watches), ``sqlite`` and ``sqlite_handle`` (see
    the module docstring)."""
    base_of, resolve = make_resolver()
    may_read, may_write = make_access_rules(tmp_dir, read_roots)
    permission_error, typeof, str_, int_, any_, len_ = PermissionError, type, str, int, any, len
    text, write_flags, dir_fd_args = _events.arg_text, _events.WRITE_FLAGS, _events.DIR_FD_ARGS
    # Events about a link itself, not its target: reading where a link points is harmless
    # except for another process's /proc links, which the kernel refuses without a word.
    no_follow = frozenset({"os.readlink"})
    own_proc = f"/proc/{sys.modules['posix'].getpid()}/"

    def refuse(category: str, detail: str, caller: Any) -> None:
        if caller is not None and not by_env(caller()):
            raise permission_error(f"sandbox: {category} access is not allowed ({detail})")
        deny(category, detail)

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
            real = resolve(arg, dir_fd, event not in no_follow)
            if real is None:
                if typeof(arg) is int_ and index == 0 and not writing:
                    real = base_of(arg)  # os.listdir(fd), os.scandir(fd)
                elif (index == 0 or index in pairs) and arg is not None and (
                    typeof(arg) is not int_
                ):  # a path argument of a type that cannot be read safely: fail closed
                    refuse("filesystem", f"{event} of a path given as {text(arg)}", caller)
                if real is None:
                    continue
            if event in no_follow:  # a link's text: only another process's are off limits
                if real.startswith("/proc/") and not real.startswith(own_proc):
                    refuse("filesystem", f"{event} {real}", caller)
            elif not (may_write(real) if writing else may_read(real)):
                refuse("filesystem", f"{event} {real}", caller)

    def check_shared_fd(event: str, fd: Any) -> None:
        """A lock or a watch is only the worker's own business on its own files."""
        if typeof(fd) is int_ and fd in fds:
            deny("tampering", f"{event} on the sandbox control fd {fd}")
            return
        real = base_of(fd) if typeof(fd) is int_ else None
        if real is None or not may_write(real):
            deny("filesystem", f"{event} on {real or text(fd)}: a lock or a watch outside the "
                 "private tmp is seen by every other process")

    def check_dir_fd(args: tuple[Any, ...]) -> None:
        """``spade.dirfd``: (function, path, flags, dir_fd) from the wrapped ``os.open``."""
        if len_(args) == 4:
            check_open((args[1], None, args[2]), args[3])

    checks: dict[str, Callable[..., Any]] = {
        "open": check_open, "paths": check_paths, "dirfd": check_dir_fd,
        "shared_fd": check_shared_fd}  # fmt: skip
    return checks | make_sqlite_checks(resolve, may_write, deny, record)


def make_sqlite_checks(
    resolve: Callable[..., Any], may_write: Callable[[str], bool],
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
) -> dict[str, Callable[..., Any]]:  # fmt: skip
    """``sqlite`` (a database name given to ``sqlite3.connect``) and ``sqlite_handle`` (puts
    an authorizer that checks every ``ATTACH`` on a new connection)."""
    typeof, any_ = type, any
    path_text, text = make_path_text(), _events.arg_text
    attach, refused = _events.SQLITE_ATTACH, _events.SQLITE_DENY
    connection_type = sys.modules["sqlite3"].Connection
    mro_of = type.__dict__["__mro__"].__get__
    set_authorizer = connection_type.set_authorizer

    def sqlite_target(path: Any) -> str | None:
        """The file a sqlite database name stands for (None: in memory, or temporary)."""
        known = path_text(path)
        if known is None:
            return "<" + text(path) + ">"
        path = known
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
        if action == attach:
            real = sqlite_target(arg1) if arg1 is not None else "(a file named by a parameter)"
            if real is not None and not may_write(real):
                record("filesystem", f"sqlite ATTACH {real}")
                return refused
        return 0

    def guard_sqlite(conn: Any) -> None:
        """``spade.sqlite``: a connection the wrapped ``sqlite3.connect`` just made."""
        if any_([c is connection_type for c in mro_of(typeof(conn))]):
            set_authorizer(conn, authorize)

    return {"sqlite": check_sqlite, "sqlite_handle": guard_sqlite}
