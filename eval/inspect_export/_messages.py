"""Our chat messages (role/content dicts, OpenAI-style tool calls) as inspect-ai messages.

The harness keeps conversations as plain dicts: ``{"role", "content"}`` plus, for agentic
suites, assistant ``tool_calls`` (``{"id", "name", "arguments"}`` or the OpenAI form
``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}``) and tool
results (``{"role": "tool", "tool_call_id", "name", "content"}``). inspect's viewer renders
tool calls and their results only when they are its own typed messages, so they are
converted here rather than dumped as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage
    from inspect_ai.tool import ToolCall


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes):
        parts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "".join(str(p) for p in parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a dict, plus a parse error when the model wrote something else."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return {"raw": raw}, f"arguments are not JSON: {exc}"
        if isinstance(value, dict):
            return value, None
        return {"value": value}, "arguments are not a JSON object"
    return {"value": raw}, "arguments are not a JSON object"


def tool_call(raw: Mapping[str, Any], index: int) -> ToolCall:
    """One recorded tool call as an inspect ``ToolCall`` (ids are made up when absent)."""
    from inspect_ai.tool import ToolCall

    fn = raw.get("function")
    if isinstance(fn, Mapping):
        name, args = fn.get("name"), fn.get("arguments")
    else:
        name, args = fn if isinstance(fn, str) else raw.get("name"), raw.get("arguments")
    arguments, error = _arguments(args)
    if raw.get("parse_error") and error is None:
        error = str(raw["parse_error"])
    return ToolCall(
        id=str(raw.get("id") or f"call_{index}"),
        function=str(name or ""),
        arguments=arguments,
        parse_error=error,
    )


def _user_turn(content: str, calls: list[ToolCall]) -> ChatMessage:
    """A user turn; a simulated user's own tool calls (tau2 telecom) are written out in the
    text and kept in metadata, since inspect's user messages cannot hold tool calls."""
    from inspect_ai.model import ChatMessageUser

    if not calls:
        return ChatMessageUser(content=content)
    lines = [f"[user tool call {c.id}] {c.function}({json.dumps(c.arguments)})" for c in calls]
    meta = {
        "tool_calls": [
            {"id": c.id, "function": c.function, "arguments": c.arguments} for c in calls
        ]
    }
    return ChatMessageUser(content="\n".join([content, *lines]).strip(), metadata=meta)


def to_inspect(
    messages: Sequence[Mapping[str, Any]], *, model: str | None = None
) -> list[ChatMessage]:
    """Convert a conversation; unknown roles are kept as user turns naming the role."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    out: list[ChatMessage] = []
    n_calls = 0
    for msg in messages:
        role = str(msg.get("role", "user"))
        content = _text(msg.get("content"))
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "assistant":
            calls = []
            for raw in msg.get("tool_calls") or []:
                calls.append(tool_call(raw, n_calls))
                n_calls += 1
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None, model=model))
        elif role == "tool":
            out.append(
                ChatMessageTool(
                    content=content,
                    tool_call_id=str(msg["tool_call_id"]) if msg.get("tool_call_id") else None,
                    function=str(msg["name"]) if msg.get("name") else None,
                )
            )
        elif role == "user":
            calls = [
                tool_call(raw, n_calls + i) for i, raw in enumerate(msg.get("tool_calls") or [])
            ]
            n_calls += len(calls)
            out.append(_user_turn(content, calls))
        else:
            out.append(ChatMessageUser(content=f"[{role}] {content}", metadata={"role": role}))
    return out
