"""Static checks on the environment's source, done in the parent without executing it.

Only what can be decided from the syntax tree is checked here: the module parses, it
defines exactly one class whose name ends in ``Env`` and that class derives from
``TextEnv`` or ``ToolEnv``, and it never touches the process-global random generators of
``random`` or ``numpy.random`` (seeding them corrupts every other environment in the
process; drawing from them makes a seed meaningless). Aliases are resolved
(``import random as r``, ``from numpy import random as npr``, ``getattr(random, "seed")``,
``__import__("random")``), so renaming a module does not hide a use. Dynamic tricks beyond
that (``sys.modules[...]``, ``eval``) are left to the determinism probe, which runs the
code in two processes.

Before any of that, the capability scan of :mod:`spade.validate._capabilities` rejects code
that reaches for a forbidden operation (stage SAFETY), whether or not a probe would run it.
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass

from spade.validate import _capabilities
from spade.validate._failure import CheckFailed
from spade.validate._verdict import Stage

_BASES = {"TextEnv": "game", "ToolEnv": "tool"}
#: Attributes of ``random`` that make a private generator rather than use the global one.
_RANDOM_OK = frozenset({"Random"})
#: Attributes of ``numpy.random`` that make private generators.
_NUMPY_OK = frozenset(
    {
        "default_rng",
        "Generator",
        "RandomState",
        "SeedSequence",
        "BitGenerator",
        "PCG64",
        "PCG64DXSM",
        "Philox",
        "SFC64",
        "MT19937",
    }
)
_SEEDING = frozenset({"seed", "setstate", "set_state"})
#: CPython 3.11's AST constructor keeps one recursion counter per interpreter, so two
#: threads building trees at once (validations side by side) can trip it with a spurious
#: ``SystemError: AST constructor recursion depth mismatch``: parses take turns.
_PARSING = threading.Lock()


@dataclass(frozen=True)
class SourceFacts:
    """What the static check learned about the module."""

    class_name: str
    kind: str  # "game" | "tool"
    line: int


def check_source(source: str, *, max_chars: int) -> SourceFacts:
    """Parse ``source`` and apply the static rules; :class:`CheckFailed` names the first broken.

    Forbidden capabilities come first and fail at stage SAFETY; the rest at stage SOURCE.
    """
    if len(source) > max_chars:
        raise _fail(f"source is {len(source)} characters long (limit {max_chars})")
    try:
        with _PARSING:
            tree = ast.parse(source)
    except SyntaxError as exc:
        if exc.lineno is None:
            raise _fail(f"source cannot be parsed: {exc.msg}") from None
        raise _fail(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _fail(f"source cannot be parsed: {type(exc).__name__}: {exc}") from None
    try:
        aliases = _Aliases(tree)
        nodes = list(ast.walk(tree))  # breadth first: a parent comes before its children
        found = _capabilities.scan(aliases, nodes)
        if found:
            raise _capabilities.failure(found)
        facts = _env_class(tree, aliases)
        if any(word in source for word in ("random", "__import__", "import_module")):
            _global_rng(aliases, nodes)  # (every detectable use names the module somewhere)
    except RecursionError:
        raise _fail("source is too deeply nested to analyse") from None
    return facts


def _fail(reason: str, **details: object) -> CheckFailed:
    return CheckFailed(Stage.SOURCE, reason, **details)


class _Aliases:
    """Which local names stand for which modules or imported objects (whole module)."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        self.star_imports: list[tuple[str, int]] = []
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                for item in node.names:
                    if item.asname:
                        self.names[item.asname] = item.name
                    else:
                        top = item.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for item in node.names:
                    if item.name == "*":
                        self.star_imports.append((node.module, node.lineno))
                        if _is_envs_module(node.module):
                            self.names.update({b: f"spade.envs.{b}" for b in _BASES})
                        continue
                    self.names[item.asname or item.name] = f"{node.module}.{item.name}"

    def resolve(self, node: ast.expr) -> str | None:
        """Dotted name an expression stands for, if it starts from an import."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            func = node.func
            if isinstance(func, ast.Name) and func.id == "__import__" and _const_str(first):
                return _const_str(first)
            if self.resolve(func) == "importlib.import_module" and _const_str(first):
                return _const_str(first)
            if (
                isinstance(func, ast.Name)
                and func.id == "getattr"
                and len(node.args) >= 2
                and _const_str(node.args[1])
            ):
                base = self.resolve(first)
                return f"{base}.{_const_str(node.args[1])}" if base else None
        return None


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement, at any depth (imports are statements, so no expression walk)."""
    found: list[ast.stmt] = []
    pending = list(body)
    while pending:
        node = pending.pop()
        found.append(node)
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                pending.extend(n for n in inner if isinstance(n, ast.stmt))
        for handler in getattr(node, "handlers", None) or []:
            pending.extend(handler.body)
        for case in getattr(node, "cases", None) or []:
            pending.extend(case.body)
    return found


def _const_str(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_envs_module(module: str) -> bool:
    return module == "spade.envs" or module.startswith("spade.envs.")


def _module_classes(tree: ast.Module) -> list[ast.ClassDef]:
    """Classes the module itself defines at top level (also inside if/try/with blocks)."""
    found: list[ast.ClassDef] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.ClassDef):
            found.append(node)
        elif isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try):
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                pending.extend(handler.body)
    return found


def _env_class(tree: ast.Module, aliases: _Aliases) -> SourceFacts:
    classes = _module_classes(tree)
    envs = [c for c in classes if c.name.endswith("Env")]
    if not envs:
        raise _fail(
            "no class whose name ends in 'Env' is defined in the module "
            "(the imported TextEnv/ToolEnv do not count)"
        )
    if len(envs) > 1:
        names = ", ".join(f"{c.name} (line {c.lineno})" for c in envs)
        raise _fail(
            f"{len(envs)} classes whose names end in 'Env' are defined ({names}); "
            "define exactly one"
        )
    env = envs[0]
    by_name = {c.name: c for c in classes}
    kind = _base_kind(env, by_name, aliases, seen=set())
    if kind is None:
        raise _fail(f"class {env.name} must inherit from spade.envs.TextEnv or spade.envs.ToolEnv")
    return SourceFacts(class_name=env.name, kind=kind, line=env.lineno)


def _base_kind(
    cls: ast.ClassDef, by_name: dict[str, ast.ClassDef], aliases: _Aliases, seen: set[str]
) -> str | None:
    seen.add(cls.name)
    kinds: set[str] = set()
    for base in cls.bases:
        qualified = aliases.resolve(base)
        if qualified:
            module, _, name = qualified.rpartition(".")
            if name in _BASES and _is_envs_module(module):
                kinds.add(_BASES[name])
            continue
        if isinstance(base, ast.Name) and base.id in by_name and base.id not in seen:
            inner = _base_kind(by_name[base.id], by_name, aliases, seen)
            if inner:
                kinds.add(inner)
    if not kinds:
        return None
    return "tool" if "tool" in kinds else "game"


def _global_rng(aliases: _Aliases, nodes: list[ast.AST]) -> None:
    for module, line in aliases.star_imports:
        if module in ("random", "numpy.random"):
            raise _fail(
                f"'from {module} import *' at line {line} imports the global random "
                "generator; draw from self.rng / self.np_random instead"
            )
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module in ("random", "numpy.random"):
            for item in node.names:
                _judge(f"{node.module}.{item.name}", node.lineno, "imports")
        elif (isinstance(node, ast.Attribute) and _may_resolve(node, aliases)) or (
            isinstance(node, ast.Call) and _is_getattr(node)
        ):
            qualified = aliases.resolve(node)
            if qualified:
                _judge(qualified, node.lineno, "uses")


def _may_resolve(node: ast.Attribute, aliases: _Aliases) -> bool:
    """Cheap pre-check: does the attribute chain start at an import or a call?"""
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Call) or (isinstance(root, ast.Name) and root.id in aliases.names)


def _is_getattr(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "getattr"


def _judge(qualified: str, line: int, verb: str) -> None:
    """Reject a use of the global generator of ``random`` or ``numpy.random``."""
    for module, allowed in (("numpy.random", _NUMPY_OK), ("random", _RANDOM_OK)):
        prefix = module + "."
        if not qualified.startswith(prefix):
            continue
        attr = qualified[len(prefix) :].split(".")[0]
        if attr in allowed:
            return
        if attr in _SEEDING:
            raise _fail(
                f"global RNG seeding: {verb} {module}.{attr} at line {line}; it corrupts every "
                "other environment in the process; seed through reset(seed=...) and draw "
                "from self.rng / self.np_random",
                line=line,
            )
        raise _fail(
            f"{verb} the global random generator ({module}.{attr} at line {line}), which makes "
            "seeds meaningless; draw from self.rng / self.np_random instead",
            line=line,
        )
