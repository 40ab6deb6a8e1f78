"""Model-written call strings in a BFCL multi-turn episode: which may run, and how they
read. Runs inside the bfcl-eval venv (loaded by ``bfcl_worker.py`` from its own folder,
never imported by the project).

Upstream executes a decoded call by ``eval`` of ``name(key=repr(value), ...)``: only a call
that is exactly a public method of the episode's backend classes with identifier keywords
and literal values is let through; anything else becomes a call to an undefined name,
which fails as an unknown function does upstream and runs nothing.
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Any

REFUSED = "spade_refused_call"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def identifier(name: object) -> bool:
    return isinstance(name, str) and bool(_IDENT.match(name)) and not keyword.iskeyword(name)


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def safe_call(text: str, methods: set[str]) -> str:
    """``text`` when it is exactly ``method(key=literal, ...)`` for a backend method, else a
    call to an undefined name (fails as an unknown function does, runs nothing)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return f"{REFUSED}()"
    ok = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in methods and not node.args
          and all(k.arg is not None and identifier(k.arg) and _literal(k.value)
                  for k in node.keywords))
    return text if ok else f"{REFUSED}()"


def structured(text: str) -> dict[str, Any]:
    """A decoded call string as ``{"name", "arguments"}`` for the transcript."""
    try:
        node = ast.parse(text, mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
            return {"name": node.func.id,
                    "arguments": {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        pass
    return {"name": text[:200], "arguments": {}}
