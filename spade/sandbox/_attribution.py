"""Who asked: environment code, or a library module that is being imported.

What ``import`` loads is fine. sympy, pandas or scipy read environment variables,
import ``ctypes`` and load shared libraries while they are imported; that is not the
environment's doing. The same operations asked for by environment code are violations.

The audit hook decides by walking the Python stack from the frame that caused an event:

* a frame of a file under the library roots (stdlib, site-packages, the ``spade`` package;
  never the private tmp or the environment's own file) is library code;
* ``<frozen ...>`` frames (importlib, ``os``, ``_collections_abc``) are neutral;
* code a library compiled while it was being imported (``exec`` of generated source, e.g.
  ``from x import *`` built as text, a dataclass ``__init__``) is neutral;
* anything else (the environment module, code it compiled, files it wrote) is the
  environment's.

An event is the library's if the walk reaches the module-level frame of a library module
being executed (an import in progress; ``ctypes``/``cffi`` themselves do not count, so
``importlib.import_module("ctypes")`` from the environment is still the environment's)
before it meets any environment frame. Everything else, including a walk that reaches the
bottom of the stack (a thread the environment started), is the environment's. For reads
of the (scrubbed) process environment there is one more way to be the library's:
``asked_by_library`` -- the first frame that is neither sandbox nor frozen code is a library
function (``urllib`` looking for proxy variables), not environment code (``os.getenv``,
``os.environ[...]``, ``dict(os.environ)`` all come straight from the environment's frame).

File names can be forged with ``compile``, ``marshal`` or ``code.replace``. ``code.replace``
is refused outright; a ``compile`` with a library or ``<frozen`` file name that is not the
real import system compiling a real library file, and any ``marshal.loads`` that is not the
import system reading a library's own ``.pyc``, switch the leniency off for the rest of the
worker's life (fail closed: every later event is then the environment's). Everything is
bound when the closures are built; nothing is looked up at call time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

#: Module names whose own import-time code is not a library boundary (native access).
NATIVE_NAMES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend", "pyseccomp",
                          "numpy.ctypeslib"})  # fmt: skip
NATIVE_PREFIXES = ("ctypes.", "cffi.", "pyseccomp.", "numpy.ctypeslib.")


def make_attribution(
    library_roots: Iterable[str], sandbox_dirs: Iterable[str], tmp_dir: str
) -> tuple[Callable[..., Any], ...]:
    """Closures ``(by_env, asked_by_library, check_compile, check_marshal, note_exec,
    set_env_file, sandbox_frame)``.

    ``by_env(frame)``: whether the operation whose innermost Python frame is ``frame`` is the
    environment's. ``check_compile(filename, frame)`` and ``check_marshal(frame)`` switch
    the leniency off on a forgery attempt. ``note_exec(code, frame)`` remembers code that a
    library being imported executes. ``set_env_file(name)`` names the environment's file
    (the first call wins). ``sandbox_frame(frame)``: whether ``frame`` runs sandbox code.
    """
    tmp_prefix = tmp_dir.rstrip("/") + "/"
    roots = {r.rstrip("/") + "/" for r in library_roots if r and r.rstrip("/")}
    prefixes = tuple(sorted(p for p in roots if not tmp_prefix.startswith(p)))
    sandbox = tuple(d.rstrip("/") + "/" for d in sandbox_dirs)
    native, native_prefixes = NATIVE_NAMES, NATIVE_PREFIXES
    str_, typeof, idof, code_type = str, type, id, type(make_attribution.__code__)
    trust = [True]  # False once a forgery was seen: everything is the environment's
    env_file: list[Any] = [None]
    made: list[Any] = []  # code compiled by libraries being imported (kept alive: ids)
    made_ids: set[int] = set()
    # Library frames that only call what they were handed (a thread's target) are neutral.
    threading = sys.modules.get("threading")
    if threading is not None:
        thread = threading.Thread
        made += [thread.run.__code__, thread._bootstrap_inner.__code__,
                 thread._bootstrap.__code__, threading.Timer.run.__code__]  # fmt: skip
        made_ids.update(map(idof, made))

    def library(name: Any) -> bool:
        return typeof(name) is str_ and name.startswith(prefixes) and name != env_file[0]

    by_env, asked_by_library = _make_walks(library, trust, made_ids, sandbox,
                                           (native, native_prefixes))  # fmt: skip
    check_compile, check_marshal = _make_forgery_checks(library, trust)

    def note_exec(code: Any, frame: Any) -> None:
        if typeof(code) is not code_type or library(code.co_filename) or idof(code) in made_ids:
            return
        if by_env(frame):
            return
        todo = [code]
        while todo:
            item = todo.pop()
            if idof(item) not in made_ids:
                made.append(item)
                made_ids.add(idof(item))
                todo += [c for c in item.co_consts if typeof(c) is code_type]

    def set_env_file(name: Any) -> None:
        if env_file[0] is None and typeof(name) is str_:
            env_file[0] = name

    def sandbox_frame(frame: Any) -> bool:
        if frame is None:
            return False
        name = frame.f_code.co_filename
        return typeof(name) is str_ and name.startswith(sandbox)

    return (by_env, asked_by_library, check_compile, check_marshal, note_exec, set_env_file,
            sandbox_frame)  # fmt: skip


def _make_walks(
    library: Callable[[Any], bool], trust: list[bool], made_ids: set[int],
    sandbox: tuple[str, ...], native: tuple[Any, tuple[str, ...]],
) -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:  # fmt: skip
    """``(by_env, asked_by_library)``: the two stack walks from the frame of an event."""
    str_, typeof, dget, idof = str, type, dict.get, id
    native_names, native_prefixes = native

    def by_env(frame: Any) -> bool:
        if not trust[0]:
            return True
        while frame is not None:
            code = frame.f_code
            name = code.co_filename
            if library(name):
                if code.co_name == "<module>":
                    module: Any = dget(frame.f_globals, "__name__")
                    if typeof(module) is str_ and not (
                        module in native_names or module.startswith(native_prefixes)
                    ):
                        return False
            elif idof(code) not in made_ids and not (
                typeof(name) is str_ and name.startswith("<frozen ")
            ):
                return True
            frame = frame.f_back
        return True

    def asked_by_library(frame: Any) -> bool:
        if not trust[0]:
            return False
        while frame is not None:
            code = frame.f_code
            name = code.co_filename
            if typeof(name) is not str_:
                return False
            if not (name.startswith(sandbox) or name.startswith("<frozen ")
                    or idof(code) in made_ids):  # fmt: skip
                return library(name)
            frame = frame.f_back
        return False

    return by_env, asked_by_library


def _make_forgery_checks(
    library: Callable[[Any], bool], trust: list[bool]
) -> tuple[Callable[[Any, Any], None], Callable[[Any], None]]:
    """``(check_compile, check_marshal)``: code given a library's file name anywhere but in
    the import system's own loaders switches the library leniency off (``trust``)."""
    external = sys.modules["_frozen_importlib_external"]
    bootstrap = sys.modules["_frozen_importlib"]
    call_removed = bootstrap._call_with_frames_removed.__code__
    source_to_code = external.SourceLoader.source_to_code.__code__
    compile_bytecode = external._compile_bytecode.__code__
    loader_types = (external.SourceFileLoader, external.SourcelessFileLoader)
    str_, typeof, dget = str, type, dict.get

    def self_type(frame: Any) -> Any:
        return typeof(dget(frame.f_locals, "self")) if frame is not None else None

    def check_compile(filename: Any, frame: Any) -> None:
        if not (typeof(filename) is str_
                and (filename.startswith("<frozen") or library(filename))):  # fmt: skip
            return
        outer = frame.f_back if frame is not None else None
        if (frame is not None and frame.f_code is call_removed and outer is not None
                and outer.f_code is source_to_code
                and self_type(outer) in loader_types):  # fmt: skip
            return
        trust[0] = False

    def check_marshal(frame: Any) -> None:
        if (frame is not None and frame.f_code is compile_bytecode
                and library(dget(frame.f_locals, "bytecode_path"))
                and self_type(frame.f_back) in loader_types):  # fmt: skip
            return
        trust[0] = False

    return check_compile, check_marshal
