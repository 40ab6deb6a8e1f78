"""The tamper check: watched functions and classes still hold their startup values.

Environment code that replaces ``builtins.len``, ``json.dumps``, a method of ``TextEnv`` or
the import system's loaders could fool the checker or pass library code off as its own;
the hook compares every watched attribute with its startup value before each reply and
names what changed (``tampering: replaced builtins.len``).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from operator import attrgetter as operator_attrgetter
from typing import Any

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


def closure_cells(roots: list[Any], files: frozenset[str]) -> list[tuple[Any, Any, str]]:
    """``(cell, value, owner name)`` for every closure cell of the sandbox's own functions
    reachable from ``roots`` (through cells, and the tuples, lists and dicts they hold):
    the trampoline, the resource check, the converter, the hook and its parts.

    Only functions whose code lives in ``files`` are followed; nothing is called. The
    module table (a cell of the dispatcher holds it) is not walked: its values are
    modules, which are never followed, and taking each one in hand would copy the pages
    of several hundred shared objects in every worker."""
    function_type, modules = type(closure_cells), sys.modules
    todo, seen, out = list(roots), set(), []
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        kind = type(item)
        if kind is function_type:
            if item.__code__.co_filename not in files:
                continue
            for cell in item.__closure__ or ():
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                out.append((cell, value, item.__qualname__))
                todo.append(value)
            todo += [d for d in item.__defaults__ or () if type(d) is function_type]
        elif kind in (tuple, list):
            todo += item
        elif kind is dict and item is not modules:
            todo += item.values()
    return out


#: Comparisons made by one generated function; longer lists are split into parts of this
#: size, so the code is compiled once, at import (in the fork server), not per worker.
PART = 64


def _compiled(test: str, names: list[str]) -> types.CodeType:
    """The code of a function of no arguments that returns ``test``, whose names are all
    free variables (its closure: no global or builtin is looked up when it runs)."""
    source = (f"def outer():\n    {' = '.join([*names, 'None'])}\n"
              f"    def check():\n        return {test}\n    return check\n")  # fmt: skip
    scope: dict[str, Any] = {}
    exec(compile(source, "<sandbox tamper check>", "exec"), scope)
    return scope["outer"]().__code__


#: ``c0 is v0 and c1 is v1 and ...`` and ``d0[k0] is v0 and ...``, ``PART`` of each: one
#: frame of ``LOAD_DEREF`` and ``IS_OP`` reads and compares them all, a fifth of the cost
#: of the same reads and compares through ``operator`` and ``map``.
_SAME_CELLS = _compiled(" and ".join(f"c{i} is v{i}" for i in range(PART)),
                        [f"{x}{i}" for x in "cv" for i in range(PART)])  # fmt: skip
_SAME_ITEMS = _compiled(" and ".join(f"d{i}[k{i}] is v{i}" for i in range(PART)),
                        [f"{x}{i}" for x in "dkv" for i in range(PART)])  # fmt: skip


def _all_parts(code: types.CodeType, columns: dict[str, list[Any]],
               pad: dict[str, Any]) -> Callable[[], bool]:  # fmt: skip
    """``code`` bound to ``PART`` rows of ``columns`` at a time (a name's letter -> a
    list of cells), the last part filled up with ``pad``'s cells (comparisons that hold);
    the result is true when every part is."""
    size = len(next(iter(columns.values())))
    parts = []
    for start in range(0, size, PART):
        bound = {}
        for letter, cells in columns.items():
            row = cells[start : start + PART]
            row += [pad[letter]] * (PART - len(row))
            bound.update({f"{letter}{i}": cell for i, cell in enumerate(row)})
        closure = tuple(bound[name] for name in code.co_freevars)  # the compiler's order
        parts.append(types.FunctionType(code, {}, "check", None, closure))
    checks = tuple(parts)

    def all_parts() -> bool:  # a loop, not ``all``: no builtin looked up when it runs
        for check in checks:  # noqa: SIM110
            if not check():
                return False
        return True

    return all_parts


def identity_check(cells: tuple[Any, ...], values: tuple[Any, ...]) -> Callable[[], bool]:
    """Whether each of ``cells`` still holds the object at the same place in ``values``
    (``is``, in order, stopping at the first that does not; a ``NameError`` if a cell was
    emptied): the cells themselves and the values, in cells of their own, are the closure
    of generated functions (:data:`_SAME_CELLS`)."""
    columns = {"c": list(cells), "v": [types.CellType(value) for value in values]}
    pad = {"c": types.CellType(None), "v": types.CellType(None)}
    return _all_parts(_SAME_CELLS, columns, pad)


def lookup_check(items: list[tuple[Any, str, Any]]) -> Callable[[], bool]:
    """Whether each ``(mapping, key, value)`` still has ``mapping[key] is value`` (in
    order, stopping at the first that does not; a ``KeyError`` if a key is gone), through
    generated functions (:data:`_SAME_ITEMS`) whose closure holds the three."""
    columns: dict[str, list[Any]] = {"d": [], "k": [], "v": []}
    for mapping, key, value in items:
        columns["d"].append(types.CellType(mapping))
        columns["k"].append(types.CellType(key))
        columns["v"].append(types.CellType(value))
    pad = {"d": types.CellType({None: None}), "k": types.CellType(None),
           "v": types.CellType(None)}  # fmt: skip
    return _all_parts(_SAME_ITEMS, columns, pad)


def make_tamper_check(
    watched: list[tuple[Any, str, Any]], record: Callable[[str, str], None],
    cells: list[tuple[Any, Any, str]] | None = None,
) -> tuple[Callable[[], None], Callable[[], None]]:  # fmt: skip
    """The per-reply check that watched attributes still hold their startup values, and
    (``cells``, filled by the caller once everything is built) that no closure cell of the
    sandbox's own functions holds anything else than it did then (compared by identity).

    The hot path (every reply): generated functions (:func:`lookup_check`) that look up
    every watched name and compare it by identity, the attribute counts of the watched
    classes, and generated functions (:func:`identity_check`) that compare every cell.
    """
    cell_list = cells if cells is not None else []
    contents = operator_attrgetter("cell_contents")
    value_error, name_error = ValueError, NameError
    len_, zip_, tuple_, map_ = len, zip, tuple, map
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
    # Every watched name looked up in its owner's ``__dict__`` (a class's is a fresh
    # read-only proxy each time; one is kept per owner) and compared by identity.
    watched_same = lookup_check([(owners[i].__dict__, name, value)
                                 for i, names in names_of.items()
                                 for name, value in zip(names, values_of[i], strict=True)])
    class_size = {i: len(o.__dict__) for i, o in owners.items() if typeof(o) is not module_type}
    class_maps = tuple(owners[i].__dict__ for i in class_size)
    class_sizes = tuple(class_size.values())
    labels = {i: o.__name__ if typeof(o) is module_type else type_qualname(o)
              for i, o in owners.items()}  # fmt: skip
    dicts = {i: o.__dict__ for i, o in owners.items()}
    reported: set[str] = set()

    def unchanged() -> bool:
        try:
            return watched_same() and tuple_(map_(len_, class_maps)) == class_sizes
        except key_error:
            return False

    # The hot path's view of ``cell_list``, made by ``prepare`` once the caller has filled
    # the list (before any environment code runs): each cell once (functions of one scope
    # share cells), all read by one function whose closure they are, compared in C.
    flat: list[Any] = [-1, None]  # cell_list's length when made, its identity check

    def prepare() -> None:
        unique = {idof(cell): (cell, value) for cell, value, _ in cell_list}
        flat[:] = [len_(cell_list), identity_check(tuple_([c for c, _ in unique.values()]),
                                                   tuple_([v for _, v in unique.values()]))]

    def cells_unchanged() -> bool:
        if flat[0] != len_(cell_list):  # not prepared: ``check_cells`` reads every cell
            return False
        try:
            return flat[1]()
        except (value_error, name_error):  # a cell emptied with ``del``
            return False

    def check_cells() -> None:
        if cells_unchanged():
            return
        for cell, value, owner in cell_list:
            try:
                same = contents(cell) is value
            except value_error:
                same = False
            key = "cell of " + owner
            if not same and key not in reported:
                reported.add(key)
                record("tampering", f"replaced a closure cell of the sandbox's {owner}")

    def check_watched() -> None:
        check_cells()
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

    return check_watched, prepare
