"""A short, real summary of an environment's source, for designer prompts and reports.

Derived statically with ``ast`` (the code is never imported or run here): the environment
class and its base, the first docstring line, ``max_turns`` / ``success_threshold`` when
set as literals, the tools of a tool environment with their signatures, whether a reference
``solution()`` exists, the size, and — when the caller has one from validation — a sample of
the first observation. Unparseable code still gets a one-line description.
"""

from __future__ import annotations

import ast

_OBS_CHARS = 240
_DOC_CHARS = 160


def _first_line(text: str | None, limit: int = _DOC_CHARS) -> str:
    if not text:
        return ""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _env_class(tree: ast.Module) -> ast.ClassDef | None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env")]
    return classes[0] if classes else None


def _literal_attr(cls: ast.ClassDef, name: str) -> object:
    for node in cls.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            try:
                return ast.literal_eval(value)
            except ValueError:
                return ast.unparse(value)
    return None


def _is_tool(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name) and target.id == "tool":
            return True
        if isinstance(target, ast.Attribute) and target.attr == "tool":
            return True
    return False


def _signature(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    args = [a for a in func.args.args if a.arg != "self"]
    parts = [f"{a.arg}: {ast.unparse(a.annotation)}" if a.annotation else a.arg for a in args]
    return f"{func.name}({', '.join(parts)})"


def summarize_env(source: str, *, first_observation: str | None = None) -> str:
    """A few lines describing an environment; see the module docstring for the contents."""
    n_lines = len(source.splitlines())
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return f"Unparseable environment source ({n_lines} lines)."
    cls = _env_class(tree)
    if cls is None:
        return f"Module without an *Env class ({n_lines} lines)."
    bases = ", ".join(ast.unparse(b) for b in cls.bases) or "object"
    head = f"{cls.name}({bases})"
    doc = _first_line(ast.get_docstring(cls)) or _first_line(ast.get_docstring(tree))
    if doc:
        head += f": {doc}"
    facts = []
    for attr in ("max_turns", "success_threshold"):
        value = _literal_attr(cls, attr)
        if value is not None:
            facts.append(f"{attr}={value}")
    funcs = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(f.name == "solution" for f in funcs):
        facts.append("has solution()")
    facts.append(f"{n_lines} lines")
    lines = [f"{head} [{'; '.join(facts)}]"]
    tools = [f for f in funcs if _is_tool(f)]
    if tools:
        described = [
            _signature(f) + (f" - {_first_line(ast.get_docstring(f), 80)}"
                             if ast.get_docstring(f) else "")
            for f in tools
        ]
        lines.append("Tools: " + " | ".join(described))
    if first_observation:
        obs = " ".join(first_observation.split())
        if len(obs) > _OBS_CHARS:
            obs = obs[: _OBS_CHARS - 1] + "…"
        lines.append(f"First observation: {obs}")
    return "\n".join(lines)
