"""Tool schemas from Python signatures, and argument checking against them.

``@tool`` reads a method's type hints and docstring once, at class definition, and stores
a :class:`ToolSpec`. Supported parameter types: ``str``, ``int``, ``float``, ``bool``,
``list[T]``, ``dict[str, T]`` of those (nested), ``Optional[T]`` / ``T | None`` and
``Literal[...]`` of str/int/float/bool values. Because model-written environments often
use them, these are accepted too: bare ``list``/``List`` (any array), bare ``dict``/``Dict``
(any object), ``typing.List[T]``/``Dict[str, T]``/``Optional[T]``/``Union[T, None]``,
``tuple[T, ...]`` and bare ``tuple`` (arrays; a tuple arrives as a list), fixed
``tuple[A, B]`` (an array of exactly those items) and ``Any``/``object`` (any JSON value,
no constraint). Anything else is a ``TypeError`` at definition time, so a broken
environment fails when it loads, not mid-episode.

Argument coercion accepts only lossless conversions, because tool arguments come from a
model and a silent guess would change the task:

- integer: an int; a float with an integral value (``3.0``); a string holding a plain
  decimal integer (``"3"``, ``" -12 "``).
- number: an int or a finite float; a string holding a JSON number (``"2.5"``, ``"1e3"``).
- boolean: a bool; the strings ``"true"``/``"false"`` (any case). Never 0/1.
- string: a string; an int (``17`` -> ``"17"``, IDs are often sent unquoted). Never a
  float, bool, list or object.
- array/object: a list/dict, or a string holding a JSON array/object.
- no type (``Any``): any value, unchanged.
- ``None`` only where the type is Optional (or ``Any``). Literal values after the above
  coercion.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute under which ``@tool`` stores the spec on the function object.
SPEC_ATTR = "__spade_tool__"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_INT_TEXT = re.compile(r"^[+-]?\d{1,300}$")
_NUMBER_TEXT = re.compile(r"^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$")
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_PRIMITIVES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
SUPPORTED = (
    "str, int, float, bool, list[T], dict[str, T], tuple[T, ...], Optional[T], Literal[...], "
    "Any, and bare list/dict/tuple"
)


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description and JSON Schema for its parameters."""

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }


class ArgumentError(ValueError):
    """Arguments that do not fit a tool's schema (shown to the agent as text)."""


@overload
def tool(fn: F) -> F: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None, *, name: str | None = None, description: str | None = None
) -> F | Callable[[F], F]:
    """Mark a ``ToolEnv`` method as a tool; its schema comes from hints and docstring."""

    def mark(func: F) -> F:
        setattr(func, SPEC_ATTR, derive_spec(func, name=name, description=description))
        return func

    return mark if fn is None else mark(fn)


def derive_spec(
    func: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> ToolSpec:
    """Build the :class:`ToolSpec` of a method (``self`` first); ``TypeError`` if unsupported."""
    where = f"tool {getattr(func, '__qualname__', func)!s}"
    if not inspect.isfunction(func):
        raise TypeError(f"{where}: @tool applies to plain methods, not {type(func).__name__}")
    tool_name = name or func.__name__
    if not _NAME.match(tool_name):
        raise TypeError(f"{where}: tool name {tool_name!r} must match {_NAME.pattern}")
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # unresolvable forward reference, bad annotation expression
        raise TypeError(f"{where}: cannot resolve type hints: {exc}") from exc
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].name != "self":
        raise TypeError(f"{where}: the first parameter must be 'self'")
    summary, arg_docs = parse_docstring(inspect.getdoc(func) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params[1:]:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(
                f"{where}: *args, **kwargs and positional-only parameters are unsupported"
            )
        if param.name not in hints:
            raise TypeError(f"{where}: parameter {param.name!r} needs a type annotation")
        has_default = param.default is not param.empty
        try:
            schema = type_schema(hints[param.name])
            if has_default and param.default is None and not _nullable(schema):
                schema = _make_nullable(schema)
            if has_default:
                schema["default"] = coerce_value(param.default, schema, param.name)
        except (TypeError, ArgumentError) as exc:
            raise TypeError(f"{where}: parameter {param.name!r}: {exc}") from None
        if param.name in arg_docs:
            schema = {**schema, "description": arg_docs[param.name]}
        properties[param.name] = schema
        if not has_default:
            required.append(param.name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    return ToolSpec(tool_name, description if description is not None else summary, parameters)


def type_schema(annotation: Any) -> dict[str, Any]:
    """JSON Schema of one supported annotation; ``TypeError`` naming it otherwise."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation is Any or annotation is object:
        return {}
    if annotation in (list, tuple) or (origin in (list, tuple) and not args):
        return {"type": "array"}
    if annotation is dict or (origin is dict and not args):
        return {"type": "object"}
    if origin is list and len(args) == 1:
        return {"type": "array", "items": type_schema(args[0])}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0])}
        if args and Ellipsis not in args and args != ((),):
            n = len(args)
            items = [type_schema(a) for a in args]
            return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}
    if origin is dict and len(args) == 2:
        if args[0] is not str:
            raise TypeError(f"dict keys must be str in {_show(annotation)}")
        return {"type": "object", "additionalProperties": type_schema(args[1])}
    if origin is Literal:
        return _literal_schema(annotation, args)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            return _make_nullable(type_schema(rest[0]))
    raise TypeError(f"unsupported type {_show(annotation)}; supported: {SUPPORTED}")


def _literal_schema(annotation: Any, values: tuple[Any, ...]) -> dict[str, Any]:
    if not values or not all(v is None or type(v) in _PRIMITIVES for v in values):
        raise TypeError(f"Literal values must be str/int/float/bool in {_show(annotation)}")
    kinds = sorted({_PRIMITIVES[type(v)] for v in values if v is not None})
    schema: dict[str, Any] = {"type": kinds[0] if len(kinds) == 1 else kinds}
    schema["enum"] = [v for v in values if v is not None]
    return _make_nullable(schema) if None in values else schema


def _make_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
    elif isinstance(kind, list):
        schema = {**schema, "type": [*kind, "null"]}
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "null" or (isinstance(kind, list) and "null" in kind)


def _show(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph (joined into one line) and Google-style ``Args:`` descriptions."""
    lines = doc.expandtabs().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    arg_docs: dict[str, str] = {}
    in_args = False
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(stripped)
        indent = len(line) - len(line.lstrip())
        if header:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters")
            base_indent, current = -1, None
            continue
        if not in_args or not stripped:
            continue
        if base_indent < 0:
            base_indent = indent
        if indent < base_indent:
            in_args = False
            continue
        arg = _ARG_LINE.match(stripped)
        if indent == base_indent and arg:
            current = arg.group(1).lstrip("*")
            arg_docs[current] = arg.group(2).strip()
        elif current is not None:
            arg_docs[current] = f"{arg_docs[current]} {stripped}".strip()
    return " ".join(summary), arg_docs


def coerce_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """Check and coerce call arguments against ``spec``; ``ArgumentError`` lists every problem."""
    properties: dict[str, Any] = spec.parameters["properties"]
    required: list[str] = spec.parameters.get("required", [])
    problems: list[str] = []
    missing = [name for name in required if name not in arguments]
    if missing:
        problems.append("missing required argument(s): " + ", ".join(missing))
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        expected = ", ".join(properties) or "none"
        problems.append(f"unexpected argument(s): {', '.join(unknown)} (expected: {expected})")
    coerced: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in properties:
            try:
                coerced[name] = coerce_value(value, properties[name], name)
            except ArgumentError as exc:
                problems.append(str(exc))
    if problems:
        raise ArgumentError("; ".join(problems))
    return coerced


def coerce_value(value: Any, schema: dict[str, Any], path: str) -> Any:
    """Coerce one value to ``schema`` under the lossless rules of this module."""
    if "type" not in schema and "enum" not in schema:
        return value  # Any: no constraint
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if value is None:
        if "null" in kinds:
            return None
        raise ArgumentError(f"argument {path!r}: expected {_expected(schema)}, got null")
    errors = []
    for kind in kinds:
        if kind == "null":
            continue
        try:
            result = _coerce_kind(value, kind, schema, path)
        except ArgumentError as exc:
            errors.append(exc)
            continue
        if "enum" in schema and not any(_same(result, v) for v in schema["enum"]):
            allowed = ", ".join(json.dumps(v) for v in schema["enum"] if v is not None)
            raise ArgumentError(f"argument {path!r}: {_brief(value)} is not one of {allowed}")
        return result
    if len(errors) == 1:
        raise errors[0]
    raise ArgumentError(f"argument {path!r}: expected {_expected(schema)}, got {_brief(value)}")


def _coerce_kind(value: Any, kind: str, schema: dict[str, Any], path: str) -> Any:
    fail = ArgumentError(f"argument {path!r}: expected {kind}, got {_brief(value)}")
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise fail
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise fail
    if kind == "integer":
        if isinstance(value, bool):
            raise fail
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_TEXT.match(value.strip()):
            return int(value.strip())
        raise fail
    if kind == "number":
        if isinstance(value, bool):
            raise fail
        if isinstance(value, int) and abs(value) < 2**1000:
            return float(value)
        if isinstance(value, float) and math.isfinite(value):
            return value
        if isinstance(value, str) and _NUMBER_TEXT.match(value.strip()):
            number = float(value.strip())
            if math.isfinite(number):
                return number
        raise fail
    if kind in ("array", "object"):
        container = _json_container(value)
        if kind == "array" and isinstance(container, list):
            fixed = schema.get("prefixItems")
            if isinstance(fixed, list):
                if len(container) != len(fixed):
                    raise ArgumentError(
                        f"argument {path!r}: expected an array of {len(fixed)} items, got "
                        f"{_brief(value)}"
                    )
                return [
                    coerce_value(v, s, f"{path}[{i}]")
                    for i, (v, s) in enumerate(zip(container, fixed, strict=True))
                ]
            items = schema.get("items", {})
            return [coerce_value(v, items, f"{path}[{i}]") for i, v in enumerate(container)]
        if kind == "object" and isinstance(container, dict):
            inner = schema.get("additionalProperties", {})
            inner = inner if isinstance(inner, dict) else {}
            return {str(k): coerce_value(v, inner, f"{path}.{k}") for k, v in container.items()}
        raise fail
    raise fail


def _json_container(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps ``True`` and ``1`` apart (JSON does)."""
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _expected(schema: dict[str, Any]) -> str:
    kinds = schema.get("type")
    return " or ".join(kinds) if isinstance(kinds, list) else str(kinds)


def _brief(value: Any) -> str:
    kind = {
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return f"{kind} {text[:40] + '...' if len(text) > 40 else text}"
