"""Turn a model reply into an action: think stripping, last box, answer tags, tool calls.

Rules, decided once here so the runner, the validator and the evaluation
harness agree:

- ``<think>...</think>`` blocks are removed first. A ``</think>`` without an opening tag
  (chat templates that put ``<think>`` in the prompt) means everything before it was
  thinking; an unclosed ``<think>`` (a reply cut off mid-thought) means everything after
  it is thinking.
- A game action is the content of the LAST complete ``\\boxed{...}`` (``\\fbox{...}`` is
  accepted as the same thing; whitespace between the macro and ``{`` is allowed; braces
  escaped as ``\\{``/``\\}`` do not count). An unclosed box is ignored. Without a box the
  whole (think-stripped) reply is the action.
- A final answer is the content of the last complete ``<answer>...</answer>``; without one,
  the whole reply.
- Tool calls are ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (``arguments``
  may be a JSON-encoded string; ``parameters`` is accepted as an alias) or the XML form
  ``<tool_call><function=NAME><parameter=ARG>value</parameter></function></tool_call>``
  (values parsed as JSON when possible, else kept as text). A final ``<tool_call>`` whose
  closing tag is missing (generation stopped at it) is parsed up to the end of the reply.
  Anything unparseable becomes a :class:`ToolCallError` whose ``reason`` is meant to be
  shown to the agent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_BOX_START = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_CALL_OPEN = "<tool_call>"
_CALL_CLOSE = "</tool_call>"
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_XML_FUNCTION = re.compile(r"<function\s*=\s*([^>]*)>(.*?)(?:</function>|$)", re.DOTALL)
_XML_PARAM = re.compile(
    r"<parameter\s*=\s*([^>]*)>(.*?)(?:</parameter>|(?=<parameter)|$)", re.DOTALL
)


@dataclass(frozen=True)
class ToolCall:
    """One well-formed tool call; ``arguments`` is a JSON object."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``{"name", "arguments"}`` form used by ``solution()`` and chat messages."""
        return {"name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class ToolCallError:
    """A ``<tool_call>`` block that could not be parsed; ``reason`` is shown to the agent."""

    raw: str
    reason: str


def strip_think(text: str) -> str:
    """Remove reasoning: ``<think>`` blocks, text before an orphan ``</think>``, and text
    after an unclosed ``<think>``. The result is whitespace-stripped.

    Linear time: degenerate replies can repeat a tag thousands of times.
    """
    closes = [m.span() for m in _THINK_CLOSE.finditer(text)]
    kept: list[str] = []
    pos = next_close = 0
    for opened in _THINK_OPEN.finditer(text):
        if opened.start() < pos:
            continue  # inside a block already removed
        while next_close < len(closes) and closes[next_close][0] < opened.end():
            next_close += 1
        if next_close == len(closes):
            break  # unclosed; cut below
        kept.append(text[pos : opened.start()])
        pos = closes[next_close][1]
    kept.append(text[pos:])
    text = "".join(kept)
    orphans = list(_THINK_CLOSE.finditer(text))
    if orphans:
        text = text[orphans[-1].end() :]
    unclosed = _THINK_OPEN.search(text)
    if unclosed:
        text = text[: unclosed.start()]
    return text.strip()


def extract_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` (brace-balanced, stripped), else None.

    One pass with a stack of open groups, so a reply with thousands of unclosed boxes
    stays linear. ``\\{`` and ``\\}`` are literal braces.
    """
    box_content = {m.end() - 1: m.end() for m in _BOX_START.finditer(text)}
    stack: list[int | None] = []  # content start of each open box; None for other groups
    best: tuple[int, int] | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1 : i + 2] in ("{", "}"):
            i += 2
            continue
        if ch == "{":
            stack.append(box_content.get(i))
        elif ch == "}" and stack:
            start = stack.pop()
            if start is not None and (best is None or start > best[0]):
                best = (start, i)
        i += 1
    return None if best is None else text[best[0] : best[1]].strip()


def extract_answer(text: str) -> str | None:
    """Content of the last complete ``<answer>...</answer>`` (stripped), else None.

    Works on the text as given; use :func:`parse_final_answer` for a raw model reply.
    """
    closes = list(_ANSWER_CLOSE.finditer(text))
    if not closes:
        return None
    close = closes[-1]
    opens = [m for m in _ANSWER_OPEN.finditer(text, 0, close.start())]
    if not opens:
        return None
    return text[opens[-1].end() : close.start()].strip()


def parse_game_action(text: str) -> str:
    """The action of a game turn: the last box after think stripping, else the reply."""
    reply = strip_think(text)
    boxed = extract_boxed(reply)
    return reply if boxed is None else boxed


def parse_final_answer(text: str) -> str:
    """The submitted answer of a tool-use episode: last ``<answer>``, else the reply."""
    reply = strip_think(text)
    answer = extract_answer(reply)
    return reply if answer is None else answer


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render a call in the Qwen JSON form (the inverse of :func:`parse_tool_calls`).

    ``<`` is written as a JSON escape so that a string argument containing a tag such as
    ``</tool_call>`` or ``<think>`` cannot end the call early.
    """
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    payload = payload.replace("<", "\\u003c")
    return f"{_CALL_OPEN}\n{payload}\n{_CALL_CLOSE}"


def parse_tool_calls(text: str) -> list[ToolCall | ToolCallError]:
    """All tool calls of a reply in order; malformed ones become :class:`ToolCallError`."""
    reply = strip_think(text)
    opens = [m.start() for m in re.finditer(re.escape(_CALL_OPEN), reply)]
    closes = [m.start() for m in re.finditer(re.escape(_CALL_CLOSE), reply)]
    results: list[ToolCall | ToolCallError] = []
    pos = next_close = 0
    for k, start in enumerate(opens):
        if start < pos:
            continue
        body_start = start + len(_CALL_OPEN)
        while next_close < len(closes) and closes[next_close] < body_start:
            next_close += 1
        end = closes[next_close] if next_close < len(closes) else len(reply)
        following = opens[k + 1] if k + 1 < len(opens) else len(reply)
        if following < end:  # a second call began before this one was closed
            results.append(ToolCallError(reply[start:following], "<tool_call> is not closed"))
            continue
        result = _parse_call_body(reply[body_start:end])
        unclosed = next_close == len(closes)
        if unclosed and isinstance(result, ToolCallError):
            result = ToolCallError(result.raw, result.reason + " (and <tool_call> is not closed)")
        results.append(result)
        pos = end + len(_CALL_CLOSE)
    return results


def _parse_call_body(body: str) -> ToolCall | ToolCallError:
    content = body.strip()
    fenced = _FENCE.match(content)
    if fenced:
        content = fenced.group(1).strip()
    if not content:
        return ToolCallError(body, "empty <tool_call>")
    if content.startswith("<function"):
        return _parse_xml_call(body, content)
    try:
        payload = json.loads(content)
    except (json.JSONDecodeError, RecursionError) as exc:
        return ToolCallError(body, f"invalid JSON in <tool_call>: {exc}")
    if not isinstance(payload, dict):
        return ToolCallError(
            body, "a <tool_call> must hold a JSON object with 'name' and 'arguments'"
        )
    name = payload.get("name")
    if not isinstance(name, str) or not name.strip():
        return ToolCallError(body, "a <tool_call> needs a non-empty string 'name'")
    arguments = payload.get("arguments", payload.get("parameters"))
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError) as exc:
            return ToolCallError(
                body, f"'arguments' of {name} is a string but not valid JSON: {exc}"
            )
    if not isinstance(arguments, dict):
        return ToolCallError(body, f"'arguments' of {name} must be a JSON object")
    return ToolCall(name.strip(), arguments)


def _parse_xml_call(body: str, content: str) -> ToolCall | ToolCallError:
    function = _XML_FUNCTION.match(content)
    if function is None:
        return ToolCallError(body, "malformed <function=NAME> in <tool_call>")
    name = function.group(1).strip().strip("\"'")
    if not name:
        return ToolCallError(body, "a <function=NAME> needs a non-empty name")
    arguments: dict[str, Any] = {}
    for param in _XML_PARAM.finditer(function.group(2)):
        key = param.group(1).strip().strip("\"'")
        if not key:
            return ToolCallError(body, f"a <parameter=NAME> of {name} has an empty name")
        arguments[key] = _xml_value(param.group(2))
    return ToolCall(name, arguments)


def _xml_value(raw: str) -> Any:
    """A parameter value: one leading/trailing newline is layout; JSON if it parses."""
    value = raw.removeprefix("\n").removesuffix("\n")
    try:
        return json.loads(value, parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # not JSON, NaN/Infinity, or absurdly deep
        return value


def _reject_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not a JSON value")
