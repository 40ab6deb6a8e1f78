"""What an agentic episode leaves behind: the conversation, its tool calls and their results.

The record is plain data (JSON round-trip via :meth:`Transcript.to_dict` and
:meth:`Transcript.from_dict`) so it can be stored with each sample and exported to other
log formats. ``messages`` is the conversation in the OpenAI chat form: assistant messages
carry ``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``
with ``arguments`` a JSON string), tool messages carry ``tool_call_id`` and ``name``.
``turns`` says how the messages were produced: per user turn, the model's steps, the
calls each step made, what the environment answered and why the turn ended.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from spade.policy._types import Message

#: Why a turn ended.
END_NO_CALL = "no_call"  # the model answered without calling a tool (the normal end)
END_STEP_CAP = "step_cap"  # it kept calling tools past the step cap (the episode stops)
END_CONTEXT = "context_exhausted"  # the next step could not fit into the context window
#: the suite's reference harness could not render the next prompt from the history (its own
#: inference of the episode fails there; the episode stops)
END_RENDER_FAILED = "render_failed"


@dataclass(frozen=True)
class CallRecord:
    """One tool call as the model made it; ``arguments`` is a JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]

    def as_message_call(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` entry for this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name,
                         "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


@dataclass(frozen=True)
class StepRecord:
    """One model reply within a turn.

    ``text`` is the reply as generated (tool-call markup included for text-level models);
    ``errors`` are the reasons of tool calls that could not be parsed; ``results`` holds
    one environment answer per entry of ``calls``.
    """

    text: str
    calls: tuple[CallRecord, ...] = ()
    errors: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    finish_reason: str = "stop"
    seed: int | None = None
    output_tokens: int | None = None
    #: native calls as the server sent them, ``(id, name, arguments string)``; None for text
    raw_calls: tuple[tuple[str | None, str, str], ...] | None = None


@dataclass
class TurnRecord:
    """One user turn: the messages that opened it and the model's steps until it ended."""

    user: list[Message]
    steps: list[StepRecord] = field(default_factory=list)
    end: str | None = None
    #: tool schemas that became available at the start of this turn (e.g. held-out ones)
    added_tools: list[str] = field(default_factory=list)
    #: why the turn ended in an error of the harness (``END_RENDER_FAILED``), else None
    error: str | None = None

    @property
    def calling_steps(self) -> int:
        return sum(1 for s in self.steps if s.calls)


@dataclass
class Transcript:
    """The whole episode: chat messages plus the per-turn structure that produced them."""

    messages: list[Message] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # schemas at the start

    def calls_per_turn(self) -> list[list[list[CallRecord]]]:
        """Per turn, per calling step, the calls made (steps without calls left out)."""
        return [[list(s.calls) for s in t.steps if s.calls] for t in self.turns]

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": [dict(m) for m in self.messages],
            "tools": list(self.tools),
            "turns": [
                {"user": t.user, "end": t.end, "added_tools": t.added_tools,
                 "steps": [_step_dict(s) for s in t.steps],
                 **({"error": t.error} if t.error is not None else {})}
                for t in self.turns
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        turns = []
        for t in data.get("turns", []):
            steps = [
                StepRecord(
                    text=s["text"],
                    calls=tuple(CallRecord(c["id"], c["name"], dict(c["arguments"]))
                                for c in s.get("calls", [])),
                    errors=tuple(s.get("errors", [])),
                    results=tuple(s.get("results", [])),
                    finish_reason=s.get("finish_reason", "stop"),
                    seed=s.get("seed"),
                    output_tokens=s.get("output_tokens"),
                    raw_calls=None if s.get("raw_calls") is None else tuple(
                        (c[0], str(c[1]), str(c[2])) for c in s["raw_calls"]),
                )
                for s in t.get("steps", [])
            ]
            turns.append(TurnRecord(list(t.get("user", [])), steps, t.get("end"),
                                    list(t.get("added_tools", [])), t.get("error")))
        return cls(list(data.get("messages", [])), turns, list(data.get("tools", [])))


def _step_dict(step: StepRecord) -> dict[str, Any]:
    out = asdict(step)
    out["calls"] = [asdict(c) for c in step.calls]
    out["errors"] = list(step.errors)
    out["results"] = list(step.results)
    if step.raw_calls is None:
        del out["raw_calls"]
    else:
        out["raw_calls"] = [list(c) for c in step.raw_calls]
    return out
