"""Action parsers on tricky replies: boxes, think blocks, answers and tool calls."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade.envs import (
    ToolCall,
    ToolCallError,
    extract_answer,
    extract_boxed,
    format_tool_call,
    parse_final_answer,
    parse_game_action,
    parse_tool_calls,
    strip_think,
)

# ---------------------------------------------------------------- think stripping


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>reasoning</think>answer", "answer"),
        ("<think>a</think> x <think>b</think> y", "x  y"),
        ("<THINK>shouting</Think>ok", "ok"),
        ("<think>multi\nline\n</think>\n\nfinal", "final"),
        # template put <think> in the prompt: only the closing tag is generated
        ("thinking without an opening tag</think>the reply", "the reply"),
        # cut off mid-thought: everything after an unclosed <think> is thinking
        ("visible <think>never closed \\boxed{9}", "visible"),
        ("<think>only thinking", ""),
        ("no tags at all  ", "no tags at all"),
        ("a </think> b <think> c </think> d", "b  d"),
    ],
)
def test_strip_think(text: str, expected: str) -> None:
    assert strip_think(text) == expected


# ---------------------------------------------------------------- boxes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{42}", "42"),
        ("first \\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{{a}{b{c}}}", "{a}{b{c}}"),
        ("\\boxed {7}", "7"),
        ("\\boxed\n\t{ 8 }", "8"),
        ("\\fbox{x}", "x"),
        ("\\boxed{a} \\fbox{b}", "b"),
        ("\\boxed{}", ""),
        ("\\boxed{ }", ""),
        ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"),  # escaped braces are literal
        ("\\boxed{日本語 ✓}", "日本語 ✓"),
        ("\\boxed{ok} and an unclosed \\boxed{oops", "ok"),  # last COMPLETE box wins
        ("\\boxed{a \\boxed{b}", "b"),
        ("\\boxedx{3}", None),
        ("boxed{3}", None),
        ("\\boxed{never closed", None),
        ("nothing here", None),
        ("", None),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


_BRACE_FREE = st.text(
    alphabet=st.characters(blacklist_characters="{}\\", blacklist_categories=("Cs",)), max_size=20
)


@st.composite
def balanced(draw: st.DrawFn, depth: int = 0) -> str:
    parts = [draw(_BRACE_FREE)]
    if depth < 3:
        for _ in range(draw(st.integers(0, 2))):
            parts.append("{" + draw(balanced(depth + 1)) + "}")
            parts.append(draw(_BRACE_FREE))
    return "".join(parts)


@given(prefix=_BRACE_FREE, content=balanced(), suffix=_BRACE_FREE)
def test_boxed_round_trip(prefix: str, content: str, suffix: str) -> None:
    text = f"{prefix}\\boxed{{{content}}}{suffix}"
    assert extract_boxed(text) == content.strip()


@given(first=balanced(), last=balanced())
def test_last_box_wins(first: str, last: str) -> None:
    assert extract_boxed(f"\\boxed{{{first}}} text \\boxed{{{last}}}") == last.strip()


def test_parse_game_action() -> None:
    assert parse_game_action("<think>\\boxed{1}</think>I pick \\boxed{2}.") == "2"
    assert parse_game_action("<think>\\boxed{1}</think>  up  ") == "up"
    assert parse_game_action("  plain reply\n") == "plain reply"
    assert parse_game_action("\\boxed{}") == ""


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>7</answer>", "7"),
        ("<answer>1</answer> later <answer> 2 </answer>", "2"),
        ("<ANSWER>x</Answer>", "x"),
        ("<answer>outer <answer>inner</answer>", "inner"),
        ("<answer>a</answer><answer>unclosed", "a"),
        ("<answer>\nmulti\nline\n</answer>", "multi\nline"),
        ("<answer></answer>", ""),
        ("</answer> before <answer>", None),
        ("no answer", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_parse_final_answer_strips_think_first() -> None:
    assert parse_final_answer("<think><answer>no</answer></think><answer>yes</answer>") == "yes"
    assert parse_final_answer("<think>x</think>  just text ") == "just text"


# ---------------------------------------------------------------- tool calls


def test_json_tool_call() -> None:
    call = '{"name": "get_order", "arguments": {"order_id": "A1"}}'
    text = f"Let me look.\n<tool_call>\n{call}\n</tool_call>"
    assert parse_tool_calls(text) == [ToolCall("get_order", {"order_id": "A1"})]


def test_several_calls_keep_order_and_errors_in_place() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        "<tool_call>{not json}</tool_call>"
        '<tool_call>{"name": "b", "arguments": {"x": {"y": [1, {"z": "}"}]}}}</tool_call>'
    )
    first, bad, last = parse_tool_calls(text)
    assert first == ToolCall("a", {})
    assert isinstance(bad, ToolCallError) and "invalid JSON" in bad.reason
    assert last == ToolCall("b", {"x": {"y": [1, {"z": "}"}]}})


def test_arguments_given_as_json_string_and_aliases() -> None:
    text = '<tool_call>{"name": "f", "arguments": "{\\"q\\": 3}"}</tool_call>'
    assert parse_tool_calls(text) == [ToolCall("f", {"q": 3})]
    assert parse_tool_calls('<tool_call>{"name": "f", "parameters": {"q": 1}}</tool_call>') == [
        ToolCall("f", {"q": 1})
    ]
    assert parse_tool_calls('<tool_call>{"name": "f"}</tool_call>') == [ToolCall("f", {})]
    assert parse_tool_calls('<tool_call>{"name": "f", "arguments": null}</tool_call>') == [
        ToolCall("f", {})
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"name": "f", "arguments": {"a": 1,}}', "invalid JSON"),
        ("", "empty"),
        ("[1, 2]", "JSON object"),
        ('{"arguments": {}}', "non-empty string 'name'"),
        ('{"name": "  ", "arguments": {}}', "non-empty string 'name'"),
        ('{"name": "f", "arguments": "{oops"}', "not valid JSON"),
        ('{"name": "f", "arguments": [1]}', "must be a JSON object"),
        ("<function=>", "non-empty name"),
    ],
)
def test_malformed_tool_calls_give_reasons(body: str, reason: str) -> None:
    (result,) = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert isinstance(result, ToolCallError)
    assert reason in result.reason
    assert result.raw == body


def test_fenced_json_inside_tool_call() -> None:
    text = '<tool_call>\n```json\n{"name": "f", "arguments": {"k": "v"}}\n```\n</tool_call>'
    assert parse_tool_calls(text) == [ToolCall("f", {"k": "v"})]


def test_unclosed_tool_call() -> None:
    # generation stopped at the closing tag: still a call
    assert parse_tool_calls('<tool_call>{"name": "f", "arguments": {}}') == [ToolCall("f", {})]
    (bad,) = parse_tool_calls('<tool_call>{"name": "f", "argu')
    assert isinstance(bad, ToolCallError) and "not closed" in bad.reason
    first, second = parse_tool_calls(
        '<tool_call>{"name": "f"}\n<tool_call>{"name": "g"}</tool_call>'
    )
    assert isinstance(first, ToolCallError) and "not closed" in first.reason
    assert second == ToolCall("g", {})


def test_tool_calls_inside_think_are_ignored() -> None:
    text = '<think><tool_call>{"name": "x"}</tool_call></think>no calls'
    assert parse_tool_calls(text) == []
    assert parse_tool_calls("plain text") == []


def test_xml_tool_call() -> None:
    text = (
        "<tool_call>\n<function=book>\n<parameter=day>\nMon\n</parameter>\n"
        '<parameter=count>\n3\n</parameter>\n<parameter=tags>\n["a", "b"]\n</parameter>\n'
        "<parameter=code>\n00123\n</parameter>\n<parameter=flag>true</parameter>\n"
        "<parameter=note>\nline one\nline two\n</parameter>\n"
        '<parameter=quoted>"42"</parameter>\n<parameter=nan>NaN</parameter>\n'
        "</function>\n</tool_call>"
    )
    assert parse_tool_calls(text) == [
        ToolCall(
            "book",
            {
                "day": "Mon",
                "count": 3,
                "tags": ["a", "b"],
                "code": "00123",
                "flag": True,
                "note": "line one\nline two",
                "quoted": "42",
                "nan": "NaN",
            },
        )
    ]


def test_xml_tool_call_lenient_about_missing_closers() -> None:
    text = "<tool_call><function=f><parameter=a>1<parameter=b>x y</tool_call>"
    assert parse_tool_calls(text) == [ToolCall("f", {"a": 1, "b": "x y"})]
    (bad,) = parse_tool_calls("<tool_call><functionf></tool_call>")
    assert isinstance(bad, ToolCallError)


def test_unicode_tool_call() -> None:
    text = '<tool_call>{"name": "lookup", "arguments": {"city": "Zürich 東京 🚀"}}</tool_call>'
    assert parse_tool_calls(text) == [ToolCall("lookup", {"city": "Zürich 東京 🚀"})]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
    arguments=st.dictionaries(st.text(), _JSON, max_size=4),
)
def test_format_then_parse_round_trip(name: str, arguments: dict[str, object]) -> None:
    text = "some words " + format_tool_call(name, arguments) + " more"
    (call,) = parse_tool_calls(text)
    assert call == ToolCall(name, arguments)
    assert json.loads(json.dumps(call.to_dict())) == {"name": name, "arguments": arguments}


_FRAGMENTS = st.sampled_from(
    ["<think>", "</think>", "<answer>", "</answer>", "<tool_call>", "</tool_call>", "\\boxed",
     "\\fbox", "{", "}", "\\{", "\\", '{"name": "f", "arguments": ', '"', "[", "]", ",", ":",
     "<function=g>", "<parameter=p>", "</parameter>", "</function>", "\n", " ", "7", "é", "NaN"]
)  # fmt: skip


@given(st.lists(_FRAGMENTS | st.text(max_size=5), max_size=40).map("".join))
def test_parsers_never_raise(text: str) -> None:
    assert isinstance(strip_think(text), str)
    assert isinstance(parse_game_action(text), str)
    assert isinstance(parse_final_answer(text), str)
    assert extract_boxed(text) is None or isinstance(extract_boxed(text), str)
    assert extract_answer(text) is None or isinstance(extract_answer(text), str)
    for item in parse_tool_calls(text):
        if isinstance(item, ToolCall):
            assert item.name and isinstance(item.arguments, dict)
        else:
            assert isinstance(item, ToolCallError) and item.reason


def test_absurd_inputs_are_handled() -> None:
    deep = '<tool_call>{"name": "f", "arguments": ' + "[" * 50_000 + "}</tool_call>"
    (bad,) = parse_tool_calls(deep)
    assert isinstance(bad, ToolCallError)
    # nested boxes: the innermost starts last, so it wins
    assert extract_boxed("\\boxed{" * 5_000 + "x" + "}" * 5_000) == "x"
    assert strip_think("<think>" * 5_000 + "x") == ""
