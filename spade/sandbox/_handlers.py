"""The hook's handlers: one function per audit event, each deciding what the event means.

Every handler gets ``(event, args, caller)``, ``caller`` being a function that returns the
frame of the code that raised the event (only called when it matters). Handlers record
(``record``) or record and refuse (``deny``); whether an event is the environment's or a
library's being imported is decided in :mod:`._attribution`. Every name a handler uses is
bound when it is built, and no handler calls code the environment defined.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from spade.sandbox import _events

Handler = Callable[[str, tuple[Any, ...], Any], None]


def make_handlers(
    attribution: tuple[Callable[..., Any], ...], paths: dict[str, Callable[..., Any]],
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
    send: Callable[[list[Any]], None], check_watched: Callable[[], None],
    fds: frozenset[int], keep: tuple[tuple[Any, ...], ...], preexisting: frozenset[int],
) -> tuple[dict[str, Handler], Handler]:  # fmt: skip
    """``(exact, fallback)``: one handler per event name, and one for event families.

    ``keep`` is ``(protected, reply codes, worker codes)``: objects compared by identity
    (the caller keeps them alive); ``preexisting``: the ids of the runtime's classes.
    """
    protected, reply_ids, worker_ids = (frozenset(map(id, g)) for g in keep)
    by_env, sandbox_frame = attribution[0], attribution[6]
    exact = _make_reply_handlers(deny, record, send, check_watched, fds, by_env, reply_ids)
    exact |= _make_object_handlers(deny, by_env, sandbox_frame, protected, preexisting,
                                   worker_ids)  # fmt: skip
    exact |= _make_code_handlers(attribution, deny, record)
    exact |= _make_access_handlers(paths, deny, record, by_env, fds)
    return exact, _make_fallback(deny, by_env)


def _make_reply_handlers(
    deny: Callable[[str, str], None], record: Callable[[str, str], None],
    send: Callable[[list[Any]], None], check_watched: Callable[[], None],
    fds: frozenset[int], by_env: Callable[[Any], bool], reply_ids: frozenset[int],
) -> dict[str, Handler]:  # fmt: skip
    """Replies (only from the serving loop), and the interpreter's own machinery: audit
    hooks, tracing, rlimits, code objects."""
    idof, typeof, len_, list_, runtime_error = id, type, len, list, RuntimeError
    coroutine_ids = frozenset({idof(sys.modules["types"].coroutine.__code__)})

    def on_reply(event: str, args: tuple[Any, ...], caller: Any) -> None:
        message: Any = args[0] if len_(args) == 1 else None
        if idof(caller().f_code) not in reply_ids:
            deny("tampering", "a reply sent by environment code")
        if typeof(message) is not list_ or len_(message) != 6:
            raise runtime_error("sandbox: malformed reply")
        check_watched()
        send(message)

    def on_code_new(event: str, args: tuple[Any, ...], caller: Any) -> None:
        # Hand-made bytecode can corrupt memory, so environment code may not build code
        # objects; a library doing it while imported (asyncio's ``@types.coroutine``) and
        # ``types.coroutine`` itself (it only sets a flag) are ordinary.
        frame = caller()
        if idof(frame.f_code) in coroutine_ids or not by_env(frame):
            return
        deny("tampering", event)

    def on_tamper(event: str, args: tuple[Any, ...], caller: Any) -> None:
        deny("tampering", event)

    def on_addaudithook(event: str, args: tuple[Any, ...], caller: Any) -> None:
        record("tampering", event)
        raise runtime_error("sandbox: adding audit hooks is not allowed")

    exact: dict[str, Handler] = {"spade.reply": on_reply, "code.__new__": on_code_new,
                                 "sys.addaudithook": on_addaudithook}  # fmt: skip
    for name in _events.TAMPER_EVENTS - {"sys.addaudithook", "code.__new__"}:
        exact[name] = on_tamper
    return exact


def _make_object_handlers(
    deny: Callable[[str, str], None], by_env: Callable[[Any], bool],
    sandbox_frame: Callable[[Any], bool], protected: frozenset[int],
    preexisting: frozenset[int], worker_ids: frozenset[int],
) -> dict[str, Handler]:  # fmt: skip
    """Attribute access on sandbox objects and runtime classes, and frames reaching the
    sandbox's own (``sys._getframe``, ``tb_frame`` and friends)."""
    idof, typeof, getattr_, str_, any_ = id, type, getattr, str, any
    text, frame_attrs = _events.arg_text, _events.FRAME_ATTRS
    type_qualname = type.__dict__["__qualname__"].__get__
    types_module = sys.modules["types"]
    frame_type = types_module.FrameType
    frame_holders = (types_module.TracebackType, types_module.GeneratorType,
                     types_module.CoroutineType, types_module.AsyncGeneratorType)  # fmt: skip

    def on_getframe(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if (args and typeof(args[0]) is frame_type and sandbox_frame(args[0])
                and idof(caller().f_code) not in worker_ids):  # fmt: skip
            deny("tampering", "sys._getframe reaching the sandbox's own frames")

    def on_attr(event: str, args: tuple[Any, ...], caller: Any) -> None:
        target = args[0]
        if idof(target) in protected:
            deny("tampering", f"{event} {text(args[1])} on a sandbox object")
        elif event == "object.__getattr__":
            name = args[1]
            if (typeof(name) is str_ and name in frame_attrs
                    and any_([typeof(target) is t for t in frame_holders])
                    and sandbox_frame(getattr_(target, name, None))
                    and idof(caller().f_code) not in worker_ids):  # fmt: skip
                deny("tampering", f"{name} reaching the sandbox's own frames")
        elif idof(target) in preexisting and by_env(caller()):
            name = type_qualname(target)
            deny("tampering", f"modifying attribute {text(args[1])} of {text(name)}")

    exact: dict[str, Handler] = {"sys._getframe": on_getframe}
    for name in ("object.__setattr__", "object.__delattr__", "object.__getattr__"):
        exact[name] = on_attr
    return exact


def _make_code_handlers(
    attribution: tuple[Callable[..., Any], ...], deny: Callable[[str, str], None],
    record: Callable[[str, str], None],
) -> dict[str, Handler]:  # fmt: skip
    """Imports, compiled and executed code, the scrubbed environment, global RNG seeding."""
    (by_env, asked_by_library, check_compile, check_marshal, note_exec, set_env_file,
     _) = attribution  # fmt: skip
    typeof, len_, str_, text = type, len, str, _events.arg_text
    native, native_prefixes, modules = _events.NATIVE_MODULES, _events.NATIVE_PREFIXES, sys.modules

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

    def on_rng(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if not asked_by_library(caller()):
            record("rng", f"{text(args[0]) if args else 'a global generator'} seeds the "
                   "process-wide generator (use self.rng or a generator of your own)")  # fmt: skip

    return {
        "import": on_import,
        "compile": lambda e, a, c: check_compile(a[1] if len_(a) > 1 else None, c()),
        "marshal.loads": lambda e, a, c: check_marshal(c()),
        "exec": lambda e, a, c: note_exec(a[0], c()) if a else None,
        "spade.envfile": lambda e, a, c: set_env_file(a[0] if a else None),
        "spade.environ": on_environ,
        "spade.rng": on_rng,
    }


def _make_access_handlers(
    paths: dict[str, Callable[..., Any]], deny: Callable[[str, str], None],
    record: Callable[[str, str], None], by_env: Callable[[Any], bool], fds: frozenset[int],
) -> dict[str, Handler]:  # fmt: skip
    """Files (through :mod:`._paths`), processes, signals, the control fds, resources."""
    permission_error, text = PermissionError, _events.arg_text
    check_open, check_paths = paths["open"], paths["paths"]

    def on_process(event: str, args: tuple[Any, ...], caller: Any) -> None:
        detail = f"{event} {text(args[:2])}"
        if not by_env(caller()):  # a library probing for a tool while it is imported
            raise permission_error(f"sandbox: process access is not allowed ({detail})")
        deny("process", detail)

    def on_signal(event: str, args: tuple[Any, ...], caller: Any) -> None:
        deny("signal", f"{event} {text(args)}")

    check_shared, shared_cmds, pipe_size = paths["shared_fd"], _events.SHARED_FCNTL, \
        _events.F_SETPIPE_SZ
    len_, typeof, int_ = len, type, int

    def on_fcntl(event: str, args: tuple[Any, ...], caller: Any) -> None:
        """Control fds; locks and watches of shared files; pipe buffers grown."""
        fd = args[0] if args else None
        cmd = args[1] if len_(args) > 1 and typeof(args[1]) is int_ else None
        if event in ("fcntl.flock", "fcntl.lockf") or (
            event == "fcntl.fcntl" and cmd in shared_cmds
        ):
            check_shared(event, fd)
        elif typeof(fd) is int_ and fd in fds:
            deny("tampering", f"{event} on the sandbox control fd {fd}")
        if event == "fcntl.fcntl" and cmd == pipe_size:
            deny("resource", "fcntl F_SETPIPE_SZ: a pipe buffer is memory outside the limit")

    exact: dict[str, Handler] = {
        "open": lambda e, a, c: check_open(a, None, c),
        "spade.fd": lambda e, a, c: deny("tampering", "{}{} on the sandbox control fd {}".format(
            "" if "." in text(a[0]) else "os.", text(a[0]), text(a[1]))),
        "spade.dirfd": lambda e, a, c: paths["dirfd"](a),
        "sqlite3.connect": lambda e, a, c: paths["sqlite"](a[0] if a else None),
        "spade.sqlite": lambda e, a, c: paths["sqlite_handle"](a[0]) if a else None,
        "spade.resource": lambda e, a, c: record("resource", text(a[0]) if a else "?"),
        "spade.memfd": lambda e, a, c: deny(
            "resource", "os.memfd_create: memory outside the memory limit"),
    }  # fmt: skip
    for name in _events.LIST_EVENTS:
        exact[name] = lambda e, a, c: check_paths(e, a, False, c)
    for name in _events.WRITE_EVENTS - {"sqlite3.connect"}:
        exact[name] = lambda e, a, c: check_paths(e, a, True, c)
    for name in _events.PROCESS_EVENTS:
        exact[name] = on_process
    for name in _events.SIGNAL_EVENTS:
        exact[name] = on_signal
    for name in ("fcntl.fcntl", "fcntl.ioctl", "fcntl.flock", "fcntl.lockf"):
        exact[name] = on_fcntl
    return exact


def _make_fallback(deny: Callable[[str, str], None], by_env: Callable[[Any], bool]) -> Handler:
    """The handler for event families (:data:`FAMILIES`): network access and ``ctypes``.

    Every ``ctypes`` event is the environment's, whoever is importing what: the one
    exception is ``ctypes`` initialising itself (its module code loads the process's own
    symbols, ``PyDLL(None)``, whenever a library re-imports it), which hands nothing to
    anyone; the import of ``ctypes`` by environment code is an attempt of its own."""
    len_, typeof, int_, text = len, type, int, _events.arg_text
    network_prefixes = _events.NETWORK_PREFIXES
    ctypes_module = sys.modules.get("ctypes")
    ctypes_file = getattr(ctypes_module, "__file__", None) or "<no ctypes>"

    def ctypes_initialising(event: str, args: tuple[Any, ...], frame: Any) -> bool:
        if event != "ctypes.dlopen" or len_(args) != 1 or args[0] is not None:
            return False
        while frame is not None and frame.f_code.co_filename == ctypes_file:
            if frame.f_code.co_name == "<module>":
                return True
            frame = frame.f_back
        return False

    def fallback(event: str, args: tuple[Any, ...], caller: Any) -> None:
        if event == "socket.__new__" and len_(args) > 1 and typeof(args[1]) is int_ \
                and args[1] == 1:  # fmt: skip
            return  # AF_UNIX: socketpair() is a pipe; connect/bind are still refused
        if event.startswith(network_prefixes):
            deny("network", f"{event} {text(args[1:] if event == 'socket.connect' else args)}")
        elif event.startswith("ctypes.") and not ctypes_initialising(event, args, caller()):
            deny("native", f"{event} (ctypes)")

    return fallback


#: Event name prefixes the fallback handler looks at; any other event without a handler
#: of its own is no attempt.
FAMILIES = (*_events.NETWORK_PREFIXES, "ctypes.")
