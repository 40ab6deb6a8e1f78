"""A restricted stand-in for ``eval`` inside the ACEBench upstream modules.

Upstream evaluates model-written text with Python's ``eval`` in two places: argument values
that parse as arithmetic (``a=3*4``) or lambdas while decoding a call, and the scenario
executor, which runs ``<instance>.<method>(k=v, ...)`` strings it assembled from the
model's call. With the real ``eval`` a completion such as
``[f(x=open(file='notes', mode='w'))]`` would run. The stand-in evaluates exactly the
shapes upstream means and raises ``ValueError`` for anything else, which upstream already
handles as a decoding or execution error:

- any binary or unary operation over literals, evaluated as Python evaluates it
  (``3*4``, ``'Olive ' + 'Garden'``, ``['festivals'] + ['cuisine']``, ``'ab' * 2``,
  ``{'a': 1} | {'b': 2}``, ``'%s' % 'x'``, ``True + 1``), with what it may build capped
  (``_MAX_SIZE`` items, ``_MAX_BITS`` bits, no giant %-format widths): a name, call,
  attribute or comprehension among the operands is refused (upstream would look names
  up in its own module, which no model answer means);
- one method call on a scenario instance of the episode (a module-level name of the
  executor module bound to an object of an upstream ``model_inference`` class), public
  methods only, with literal arguments.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
#: longest string, bytes, list, tuple, set or dict an operation may build
_MAX_SIZE = 100_000
#: largest integer (in bits) an operation may build
_MAX_BITS = 100_000
_SIZED = (str, bytes, list, tuple, set, frozenset, dict)
#: a %-format field with a width or precision (``%*d``, ``%9999999s``)
_WIDE_FIELD = re.compile(r"%[-#0 +]*(\*|\d{6,})|%[-#0 +]*\d*\.(\*|\d{6,})")


def _literal(node: ast.AST) -> Any:
    """A literal leaf or container of values (whose items may be operations too)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.Set):
        return {_value(e) for e in node.elts}
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]  # None: a ``**`` unpacking
        if len(keys) == len(node.keys):
            return {_value(k): _value(v) for k, v in zip(keys, node.values, strict=True)}
    raise ValueError(f"refused: {type(node).__name__} is not a literal")


def _bits(value: Any) -> int:
    return abs(int(value)).bit_length() if isinstance(value, int) else 0


def _cost_check(op: type[ast.operator], left: Any, right: Any) -> None:
    """Refuse operations whose result would be too large to build, before building it."""
    if op is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            if (isinstance(seq, str | bytes | list | tuple) and isinstance(n, int)
                    and len(seq) * max(n, 0) > _MAX_SIZE):
                raise ValueError("refused: value too large")
    if (op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0
            and _bits(left) * right > _MAX_BITS):
        raise ValueError("refused: power too large")
    if op is ast.LShift and isinstance(right, int) and _bits(left) + right > _MAX_BITS:
        raise ValueError("refused: value too large")
    if op is ast.Mod and isinstance(left, str | bytes):
        text = left if isinstance(left, str) else left.decode("latin-1")
        if _WIDE_FIELD.search(text):
            raise ValueError("refused: format field too wide")


def _value(node: ast.AST) -> Any:
    """Python's value of an operation over literals, size-capped; ValueError otherwise."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _value(node.left), _value(node.right)
        _cost_check(type(node.op), left, right)
        try:
            value = _BINOPS[type(node.op)](left, right)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ValueError(f"refused: {exc}") from None
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        try:
            value = _UNARY[type(node.op)](_value(node.operand))
        except (ArithmeticError, TypeError) as exc:
            raise ValueError(f"refused: {exc}") from None
    else:
        value = _literal(node)
    if isinstance(value, _SIZED) and len(value) > _MAX_SIZE:
        raise ValueError("refused: value too large")
    if _bits(value) > _MAX_BITS:
        raise ValueError("refused: value too large")
    return value


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
