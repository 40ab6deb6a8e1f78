"""Static tool-schema rules (what a ToolEnv can only break by overriding its schemas)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from spade.envs.examples import load_example_class
from spade.validate._failure import CheckFailed
from spade.validate._tool_schema import bad_calls, check_schemas, flat_tools
from spade.validate._verdict import Stage

GOOD = {
    "name": "lookup",
    "description": "Look a key up.",
    "parameters": {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
}


def reason(tools: list[dict[str, Any]]) -> str:
    with pytest.raises(CheckFailed) as info:
        check_schemas(tools)
    assert info.value.stage == Stage.TOOL_SCHEMA
    return info.value.reason


def test_example_schemas_are_valid() -> None:
    for name in ("refund_desk", "warehouse_restock", "meeting_scheduler"):
        tools = flat_tools(load_example_class(name).tools())  # type: ignore[attr-defined]
        assert check_schemas(tools)["tools"]


@pytest.mark.parametrize(
    ("tools", "fragment"),
    [
        ([], "defines no tools"),
        ([GOOD, GOOD], "two tools are named 'lookup'"),
        ([{**GOOD, "name": "look up"}], "not a valid identifier"),
        ([{**GOOD, "description": "  "}], "no description"),
        ([{**GOOD, "parameters": "object"}], "must be a JSON Schema object"),
        (
            [{**GOOD, "parameters": {"type": "object", "properties": {"k": {"type": "strnig"}}}}],
            "not valid JSON Schema at properties/k/type",
        ),
        ([{**GOOD, "parameters": {"type": "array"}}], "of type 'object'"),
        (
            [{**GOOD, "parameters": {"type": "object", "properties": {}, "required": ["k"]}}],
            "required parameters ['k'] are not defined",
        ),
    ],
)
def test_broken_schemas(tools: list[dict[str, Any]], fragment: str) -> None:
    assert fragment in reason(tools)


def test_openai_and_flat_forms_and_bad_calls() -> None:
    flat = flat_tools([{"type": "function", "function": GOOD}, GOOD])
    assert flat == [GOOD, GOOD]
    ((name, arguments),) = bad_calls(GOOD)
    assert name == "lookup"
    assert arguments == {"__unexpected_argument__": 1, "key": {"not": "a string"}}


# -- the fast path: plain schemas skip the meta-schema, never wrongly -----------------------

_ANY = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(width=16) | st.text(max_size=3)
_TYPE = st.sampled_from(["string", "integer", "number", "object", "array", "null", "boolean",
                         "nope", ""])  # fmt: skip


def _keyword_values(schema: Any) -> dict[str, Any]:
    """Per keyword: mostly values the meta-schema takes, some it rejects."""
    names = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)
    return {
        "type": _TYPE | st.lists(_TYPE, max_size=3) | _ANY,
        "properties": st.dictionaries(st.sampled_from(["a", "b"]), schema, max_size=2) | _ANY,
        "required": names | st.lists(_ANY, max_size=2),
        "items": schema | st.lists(schema, max_size=2),
        "prefixItems": st.lists(schema, max_size=2),
        "additionalProperties": schema | _ANY,
        "anyOf": st.lists(schema, max_size=2),
        "not": schema,
        "enum": st.lists(_ANY, max_size=3) | _ANY,
        "examples": st.lists(_ANY, max_size=2) | _ANY,
        "const": _ANY,
        "default": _ANY,
        "description": st.text(max_size=3) | _ANY,
        "pattern": st.text(max_size=3) | _ANY,
        "minimum": _ANY,
        "multipleOf": _ANY,
        "minItems": _ANY,
        "maxLength": _ANY,
        "uniqueItems": _ANY,
        "$ref": st.text(max_size=3),
    }


def _schemas(leaf: Any) -> Any:
    """Booleans, or dicts of one to three keywords."""
    one = st.one_of([st.fixed_dictionaries({k: v}) for k, v in _keyword_values(leaf).items()])
    merged = st.lists(one, min_size=1, max_size=3).map(lambda ds: {k: v for d in ds
                                                                  for k, v in d.items()})
    return st.booleans() | merged


_SCHEMAS = st.recursive(st.booleans() | st.just({}), _schemas, max_leaves=8)


@given(_SCHEMAS)
@example({"type": ["string", "string"]})
@example({"required": ["a", "a"]})
@example({"minItems": -1})
@example({"multipleOf": 0})
@example({"items": [{"type": "string"}]})
@example({"enum": "a"})
@settings(max_examples=600, deadline=None)
def test_a_plainly_valid_schema_is_valid_for_the_meta_schema(schema: Any) -> None:
    from hypothesis import event

    from spade.validate._tool_schema import _meta_validator, plainly_valid

    plain = plainly_valid(schema)
    event(f"plain: {plain}")
    if plain:
        assert list(_meta_validator().iter_errors(schema)) == [], schema


def test_schemas_written_by_the_tool_decorator_take_the_fast_path() -> None:
    from typing import Literal

    from spade.envs._schema import type_schema
    from spade.validate._tool_schema import plainly_valid

    for annotation in (str, int, float, bool, list[int], tuple[int, str], dict[str, float],
                       Literal["a", "b"], int | None, list[dict[str, bool]]):  # fmt: skip
        assert plainly_valid(type_schema(annotation)), annotation
    for name in ("refund_desk", "warehouse_restock", "meeting_scheduler"):
        for tool in flat_tools(list(load_example_class(name).tools())):
            assert plainly_valid(tool["parameters"]), (name, tool["name"])
    assert not plainly_valid({"type": "object", "$defs": {}})  # unknown here: meta-schema
    assert not plainly_valid({"type": ["string", "string"]})
