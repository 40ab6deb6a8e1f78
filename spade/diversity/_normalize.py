"""Code normalisation for near-duplicate detection.

Two environments that differ only in comments, docstrings, formatting or the names their
author chose are the same task. :func:`normalize_code` parses the source, drops docstrings
and other bare string statements, renames every identifier the module itself binds (classes,
functions, arguments, assigned names and attributes) to ``v0, v1, ...`` in order of first
appearance, and unparses — which also canonicalises whitespace and removes comments.
Builtins, imported names, dunders and the environment contract's names (``reset``, ``step``,
``rng``...) keep their spelling: they carry meaning and are shared by every environment.
Literals are kept, so two envs with different data or story text stay distinguishable by
degree (token-shingle Jaccard) even though their structure matches.

The shingle similarity uses the ``anonymous`` form, where all bound identifiers become the
same token, so it measures structure and literals rather than naming.

Unparseable code falls back to comment stripping and whitespace collapsing.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import re
import tokenize

#: Names kept as written: the environment contract and conventional receivers.
RESERVED = frozenset({
    "self", "cls", "reset", "step", "solution", "check", "call_tool", "max_turns",
    "success_threshold", "rng", "np_random", "submitted_answer", "seed", "options",
    "action", "tool",
})
_KEEP = RESERVED | frozenset(dir(builtins))
_SKIP_TOKENS = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                tokenize.ENDMARKER, tokenize.COMMENT}


class _Binder(ast.NodeVisitor):
    """Collects, in source order, the identifiers the module binds itself."""

    def __init__(self) -> None:
        self.order: dict[str, None] = {}
        self.imported: set[str] = set()

    def _bind(self, name: str | None) -> None:
        if name and name not in _KEEP and not name.startswith("__"):
            self.order.setdefault(name, None)

    def visit_Import(self, node: ast.Import) -> None:
        self.imported.update((a.asname or a.name).split(".")[0] for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imported.update(a.asname or a.name for a in node.names)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_arg(self, node: ast.arg) -> None:
        self._bind(node.arg)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._bind(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store):
            self._bind(node.attr)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._bind(node.name)
        self.generic_visit(node)


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def _new(self, name: str) -> str:
        return self.mapping.get(name, name)

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._new(node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.attr = self._new(node.attr)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._new(node.arg)
        return self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        if node.arg:
            node.arg = self._new(node.arg)
        return self.generic_visit(node)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        node.name = self._new(node.name)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    visit_FunctionDef = _def
    visit_AsyncFunctionDef = _def
    visit_ClassDef = _def

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstrings and other bare strings
        return self.generic_visit(node)


def _fallback(source: str) -> str:
    lines = [re.sub(r"#.*$", "", line).strip() for line in source.splitlines()]
    return "\n".join(line for line in lines if line)


def normalize_code(source: str, *, anonymous: bool = False) -> str:
    """Canonical form of a module (see the module docstring); stable across formatting.

    ``anonymous=True`` renames every bound identifier to the same ``v`` instead of
    numbering them: one split or merged variable then changes a few tokens instead of
    shifting the numbers of all later names (used for the shingle similarity).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _fallback(source)
    binder = _Binder()
    binder.visit(tree)
    names = [n for n in binder.order if n not in binder.imported]
    mapping = {name: "v" if anonymous else f"v{i}" for i, name in enumerate(names)}
    tree = _Renamer(mapping).visit(tree)
    if not tree.body:
        return ""
    return ast.unparse(ast.fix_missing_locations(tree))


def code_hash(source: str) -> str:
    """sha256 of the normalised code: equal hashes mean equal structure and literals."""
    return hashlib.sha256(normalize_code(source).encode()).hexdigest()


def code_tokens(normalized: str) -> list[str]:
    """Python tokens of normalised code (strings stay whole); regex split if untokenisable."""
    try:
        return [
            tok.string
            for tok in tokenize.generate_tokens(io.StringIO(normalized).readline)
            if tok.type not in _SKIP_TOKENS
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.findall(r"\w+|[^\w\s]", normalized)


def shingles(tokens: list[str], k: int = 3) -> set[tuple[str, ...]]:
    """The set of ``k``-token windows (the whole sequence when shorter)."""
    if len(tokens) < k:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    """``|a & b| / |a | b|``; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
