"""The agent's side of the conversation: system prompt, first observation, feedback texts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from spade.episodes._templates import render
from spade.policy._types import Message


def system_prompt(
    kind: str, tools: Sequence[dict[str, Any]] = (), *, list_tools: bool = True
) -> str:
    """The agent's system prompt for a game or a tool-use task.

    ``list_tools`` puts the tool schemas into the text; it is off when the policy's chat
    template renders them itself (``tools=``), so they are never shown twice.
    """
    if kind == "game":
        return render("agent_games.md").strip()
    block = ""
    if list_tools and tools:
        lines = "\n".join(json.dumps(t, ensure_ascii=False, sort_keys=True) for t in tools)
        block = render("tools_block.md", tools=lines).rstrip()
    return render("agent_tool_use.md", tools_block=block).strip()


def first_observation(observation: str, hint: str | None) -> str:
    """The first user message; the hinted arm gets a delimited hint block after it."""
    if hint is None:
        return observation
    return render("hint_block.md", observation=observation.rstrip(), hint=hint.strip()).strip()


def initial_messages(
    kind: str,
    observation: str,
    hint: str | None,
    tools: Sequence[dict[str, Any]],
    *,
    list_tools: bool,
) -> list[Message]:
    return [
        {"role": "system", "content": system_prompt(kind, tools, list_tools=list_tools)},
        {"role": "user", "content": first_observation(observation, hint)},
    ]


def nudge() -> str:
    return render("nudge.md").strip()


def tool_error(reason: str) -> str:
    return render("tool_error.md", reason=reason.rstrip(". ")).strip()
