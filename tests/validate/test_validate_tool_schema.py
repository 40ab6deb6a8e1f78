"""Static tool-schema rules (what a ToolEnv can only break by overriding its schemas)."""

from __future__ import annotations

from typing import Any

import pytest

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
