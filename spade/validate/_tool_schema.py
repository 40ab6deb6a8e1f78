"""Tool schemas: valid JSON Schema, sensible names, descriptions; errors come back as text."""

from __future__ import annotations

import functools
import re
from typing import Any

from spade.validate._failure import CheckFailed
from spade.validate._verdict import Stage

#: OpenAI's rule for function names.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
#: Size caps checked before any schema work (a meta-schema check of a long mixed list is
#: quadratic): tools, JSON nodes in all schemas, items of one list, nesting depth.
MAX_TOOLS = 64
MAX_NODES = 20_000
MAX_LIST = 512
MAX_DEPTH = 32
#: A value of the wrong JSON type for each schema type (a tool must reject it as text).
_WRONG = {
    "string": {"not": "a string"},
    "integer": "not-a-number",
    "number": "not-a-number",
    "boolean": [1, 2],
    "array": 3.5,
    "object": 3.5,
    "null": "not-null",
}


def flat_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """``{"name", "description", "parameters"}`` per tool, from OpenAI or flat schemas."""
    flat = []
    for entry in tools:
        if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
            entry = entry["function"]
        flat.append(entry if isinstance(entry, dict) else {"name": entry})
    return flat


def check_schemas(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Static checks of every tool schema; :class:`CheckFailed` names the first problem."""
    if not tools:
        raise _fail("the tool environment defines no tools (mark methods with @tool)")
    problem = size_problem(tools)
    if problem:
        raise _fail(f"the tool schemas are too large: {problem}")
    seen: set[str] = set()
    for spec in tools:
        name = spec.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise _fail(f"tool name {name!r} is not a valid identifier ({_NAME.pattern})")
        if name in seen:
            raise _fail(f"two tools are named {name!r}")
        seen.add(name)
        description = spec.get("description")
        if not isinstance(description, str) or not description.strip():
            raise _fail(f"tool {name!r} has no description (write a docstring)")
        params = spec.get("parameters")
        if not isinstance(params, dict):
            raise _fail(
                f"tool {name!r}: parameters must be a JSON Schema object, got "
                f"{type(params).__name__}"
            )
        exc = _schema_error(params)
        if exc is not None:
            where = "/".join(str(p) for p in exc.path) or "top level"
            raise _fail(
                f"tool {name!r}: parameters are not valid JSON Schema at {where}: {exc.message}"
            )
        if params.get("type") != "object" or not isinstance(params.get("properties", {}), dict):
            raise _fail(f"tool {name!r}: parameters must be of type 'object' with properties")
        missing = [r for r in params.get("required", []) if r not in params.get("properties", {})]
        if missing:
            raise _fail(f"tool {name!r}: required parameters {missing} are not defined")
    return {"tools": sorted(seen)}


def size_problem(tools: list[Any]) -> str | None:
    """What makes the schemas too large to check, or None (a walk that stops early)."""
    if len(tools) > MAX_TOOLS:
        return f"{len(tools)} tools (limit {MAX_TOOLS})"
    stack: list[tuple[Any, int]] = [(t, 0) for t in tools]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES} values in all"
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, list | tuple):
            items = list(value)
        else:
            if isinstance(value, str) and len(value) > 8192:
                return f"a text of {len(value)} characters"
            continue
        if len(items) > MAX_LIST:
            return f"a list or object of {len(items)} items (limit {MAX_LIST})"
        stack.extend((item, depth + 1) for item in items)
    return None


@functools.lru_cache(maxsize=1)
def _meta_validator() -> Any:
    """The Draft 2020-12 meta-schema validator (built once: building it is the slow part)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


def _schema_error(params: dict[str, Any]) -> Any:
    """The most relevant reason ``params`` is not valid JSON Schema, or None."""
    if plainly_valid(params):
        return None
    from jsonschema.exceptions import best_match

    return best_match(_meta_validator().iter_errors(params))


_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_TEXT = frozenset({"description", "title", "format", "pattern", "$comment"})
_FLAGS = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties",
                     "maxProperties"})  # fmt: skip
_SUBSCHEMAS = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames"})
_SCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
_ANY_VALUE = frozenset({"default", "const", "examples", "enum"})


def plainly_valid(schema: Any, depth: int = 0) -> bool:
    """True when ``schema`` only uses the keywords tool schemas are made of, each with a
    value the Draft 2020-12 meta-schema accepts; then it is valid JSON Schema, and the
    (slow) meta-schema validation is skipped. False means "not known to be plain": the
    meta-schema decides. It never says True for a schema the meta-schema rejects."""
    if type(schema) is bool:
        return True
    if type(schema) is not dict or depth > 32:
        return False
    return all(_plain_keyword(key, value, depth) for key, value in schema.items())


def _plain_keyword(key: str, value: Any, depth: int) -> bool:
    kind = type(value)
    if key == "type":
        if kind is str:
            return value in _SIMPLE_TYPES
        return (kind is list and bool(value) and all(type(v) is str for v in value)
                and set(value) <= _SIMPLE_TYPES and len(set(value)) == len(value))  # fmt: skip
    if key == "properties":
        return kind is dict and all(plainly_valid(v, depth + 1) for v in value.values())
    if key == "required":
        return (kind is list and all(type(v) is str for v in value)
                and len(set(value)) == len(value))  # fmt: skip
    if key in _TEXT:
        return kind is str
    if key in _FLAGS:
        return kind is bool
    if key in _NUMBERS:
        return kind is int or kind is float
    if key == "multipleOf":
        return (kind is int or kind is float) and value > 0
    if key in _COUNTS:
        return kind is int and value >= 0
    if key in _SUBSCHEMAS:
        return plainly_valid(value, depth + 1)
    if key in _SCHEMA_LISTS:
        return kind is list and bool(value) and all(plainly_valid(v, depth + 1) for v in value)
    if key in _ANY_VALUE:
        return key in ("default", "const") or kind is list
    return False


def bad_calls(spec: dict[str, Any]) -> list[tuple[str, Any]]:
    """One call per tool with bad arguments (an unknown argument, a value of the wrong type,
    required ones missing); the tool must answer it with an error text, not raise."""
    params = spec.get("parameters") or {}
    properties: dict[str, Any] = params.get("properties") or {}
    arguments: dict[str, Any] = {"__unexpected_argument__": 1}
    for prop, schema in list(properties.items())[:1]:
        kinds = schema.get("type") if isinstance(schema, dict) else None
        kind = kinds[0] if isinstance(kinds, list) and kinds else kinds
        if isinstance(kind, str) and kind in _WRONG:
            arguments[prop] = _WRONG[kind]
    return [(spec["name"], arguments)]


def _fail(reason: str) -> CheckFailed:
    return CheckFailed(Stage.TOOL_SCHEMA, reason)
