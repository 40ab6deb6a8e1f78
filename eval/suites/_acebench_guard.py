"""A restricted stand-in for ``eval`` inside the ACEBench upstream modules.

Upstream evaluates model-written text with Python's ``eval`` in two places: argument values
that parse as arithmetic (``a=3*4``) or lambdas while decoding a call, and the scenario
executor, which runs ``<instance>.<method>(k=v, ...)`` strings it assembled from the
model's call. With the real ``eval`` a completion such as
``[f(x=open(file='notes', mode='w'))]`` would run. The stand-in evaluates exactly the
shapes upstream means and raises ``ValueError`` for anything else, which upstream already
handles as a decoding or execution error:

- arithmetic over numeric constants (``+ - * / // % **``, unary ``+ -``; powers bounded);
- concatenation with ``+`` of string, list or tuple literals of one type
  (``'Olive ' + 'Garden'``, ``['festivals'] + ['cuisine']``), the result at most
  ``_MAX_SIZE`` long;
- one method call on a scenario instance of the episode (a module-level name of the
  executor module bound to an object of an upstream ``model_inference`` class), public
  methods only, with literal arguments.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any, cast

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}
_MAX_POW_EXP = 64
_MAX_MAGNITUDE = 10**18
#: longest string, list or tuple a concatenation may build
_MAX_SIZE = 100_000
_SEQUENCES = (str, list, tuple)


def _sequence(node: ast.AST) -> str | list[Any] | tuple[Any, ...] | None:
    """A string/list/tuple literal, or a ``+`` of such of one type; None for other nodes."""
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError("refused: not a literal") from None
        return cast(list[Any] | tuple[Any, ...], value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _sequence(node.left)
        if left is None:
            return None
        right = _sequence(node.right)
        if right is None or type(left) is not type(right):
            raise ValueError("refused: concatenation of different types")
        if len(left) + len(right) > _MAX_SIZE:
            raise ValueError("refused: value too large")
        return left + right  # type: ignore[operator]
    return None


def _value(node: ast.AST) -> Any:
    """A concatenation of sequence literals, else constant arithmetic."""
    seq = _sequence(node)
    return seq if seq is not None else _arith(node)


def _arith(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return cast(int | float, node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_arith(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_POW_EXP or abs(left) > 10**6):
            raise ValueError("refused: power too large")
        value = _BINOPS[type(node.op)](left, right)
        if abs(value) > _MAX_MAGNITUDE:
            raise ValueError("refused: value too large")
        return value
    raise ValueError("refused: not constant arithmetic")


def _method_call(node: ast.Call, namespace: Mapping[str, Any]) -> Any:
    func = node.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        raise ValueError("refused: not a method call on a scenario instance")
    target = namespace.get(func.value.id)
    module = type(target).__module__ if target is not None else ""
    if not module.startswith("model_inference.") or func.attr.startswith("_"):
        raise ValueError(f"refused: {func.value.id}.{func.attr} is not a scenario method")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    if len(kwargs) != len(node.keywords):
        raise ValueError("refused: ** arguments")
    return getattr(target, func.attr)(*args, **kwargs)


def restricted_eval_for(namespace: Mapping[str, Any]) -> Callable[..., Any]:
    """An ``eval`` replacement for one upstream module (``namespace`` = its globals)."""

    def restricted_eval(source: str, *_ignored: Any) -> Any:
        if not isinstance(source, str):
            raise ValueError("refused: not source text")
        try:
            body = ast.parse(source.strip(), mode="eval").body
        except SyntaxError as exc:
            raise ValueError(f"refused: {exc.msg}") from None
        if isinstance(body, ast.Call):
            return _method_call(body, namespace)  # non-literal arguments: ValueError
        return _value(body)

    return restricted_eval
