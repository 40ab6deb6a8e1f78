"""One evaluated model's side of one episode: its tools, its history, its open turn.

A suite opens a turn with the user's messages (:meth:`AgentSession.begin_turn`), lets the
loop (:func:`spade.eval.agent.play_turn`) run model steps until the turn ends, and reads the
:class:`~spade.eval.agent.Transcript` at the end. Between turns it may change the tools (held-out
functions joining later), which the model then sees from its next step on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from spade.eval.agent._environment import ToolEnvironment
from spade.eval.agent._records import (
    END_CONTEXT,
    END_NO_CALL,
    END_RENDER_FAILED,
    END_STEP_CAP,
    CallRecord,
    StepRecord,
    Transcript,
    TurnRecord,
)

from spade.envs import ToolCall, ToolCallError
from spade.policy._types import Message
from spade.seeds import derive_seed

if TYPE_CHECKING:
    from spade.eval.providers._base import Request

#: The turn ended after the first reply by design (single-step protocols; calls not run).
END_SINGLE_STEP = "single_step"


class PromptUnrenderable(Exception):
    """The suite's reference harness cannot render the next prompt from this history (an
    earlier reply it keeps in a form its own prompt formatter fails on)."""


@dataclass(frozen=True)
class Reply:
    """One model step as a backend produced it, before the session books it."""

    text: str
    calls: tuple[ToolCall | ToolCallError, ...] = ()
    call_ids: tuple[str | None, ...] = ()  # native backends name their calls
    finish_reason: str = "stop"  # "stop" | "length" | "context" (the prompt did not fit)
    output_tokens: int | None = None
    #: a native backend's calls exactly as the server sent them, ``(id, name, arguments
    #: string)``, malformed ones included; None for a text reply (its calls are in the text)
    raw_calls: tuple[tuple[str | None, str, str], ...] | None = None


@dataclass(frozen=True)
class Decision:
    """How a suite's own reading of a reply (its reference implementation's) goes on: the
    calls it decoded and ran with their results, or the turn's end (``end``) with none."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    results: tuple[str, ...] = ()
    end: str | None = None


@dataclass
class AgentSession:
    """The model's state in one episode.

    ``tools`` are OpenAI function schemas (``{"type": "function", "function": {...}}``).
    ``seed`` is the episode's request seed; step ``k`` of turn ``t`` samples with
    ``derive_seed(seed, "agent-step", t, k)``. ``request`` names the (suite, item, sample)
    for providers that answer by key (replay, oracle). ``state`` belongs to the backend
    (token ids, a script cursor) and is never read by the loop.
    """

    env: ToolEnvironment
    tools: list[dict[str, Any]]
    seed: int
    request: Request | None = None
    system: str | None = None
    transcript: Transcript = field(default_factory=Transcript)
    state: dict[str, Any] = field(default_factory=dict)
    tools_version: int = 0
    stopped: bool = False  # the episode cannot go on (step cap, context exhausted)
    #: show the tools as the Qwen3 FC system block whatever the chat template does (the
    #: block bfcl-eval's Qwen3 FC handler writes itself, JSON as ``json.dumps`` writes it)
    tools_as_block: bool = False
    #: the whole next prompt as text, as the suite's reference harness renders its own
    #: history (earlier replies kept as it keeps them, tool results in its format); called
    #: by the loop before every step, whatever the backend; raises
    #: :class:`PromptUnrenderable` where the harness fails. None: the backend renders.
    render_prompt: Callable[[AgentSession], str] | None = None
    #: what ``render_prompt`` gave for the step about to be taken (token backends encode it)
    prompt_text: str | None = None

    def __post_init__(self) -> None:
        self.transcript.tools = list(self.tools)
        if self.system:
            self.transcript.messages.append({"role": "system", "content": self.system})

    @property
    def current(self) -> TurnRecord:
        if not self.transcript.turns:
            raise RuntimeError("no turn has begun")
        return self.transcript.turns[-1]

    @property
    def turn_open(self) -> bool:
        return bool(self.transcript.turns) and self.current.end is None and not self.stopped

    def begin_turn(
        self, user: Sequence[Message], add_tools: Sequence[dict[str, Any]] = ()
    ) -> None:
        """Open the next turn with ``user`` messages; ``add_tools`` join the tool list."""
        if self.turn_open:
            raise RuntimeError("the previous turn is still open")
        if self.stopped:
            raise RuntimeError("the episode has stopped")
        if add_tools:
            self.tools = [*self.tools, *add_tools]
            self.tools_version += 1
        names = [str(t.get("function", t).get("name")) for t in add_tools]
        self.transcript.turns.append(TurnRecord([dict(m) for m in user], added_tools=names))
        self.transcript.messages.extend(dict(m) for m in user)

    def fail_render(self, reason: str) -> None:
        """End the episode where the reference harness could not render the next prompt:
        no reply is asked for, the turn ends ``END_RENDER_FAILED`` with the reason."""
        self.current.end = END_RENDER_FAILED
        self.current.error = reason
        self.stopped = True

    def retract_empty(self) -> None:
        """Take back the last reply, an empty one, so the model is asked again with the
        history it had (harnesses that retry an empty reply send the same messages). The
        step stays recorded, so the next one gets its own seed and a replay its own step."""
        step = self.current.steps[-1] if self.current.steps else None
        if step is None or step.text.strip() or step.calls or step.errors:
            raise RuntimeError("only an empty last reply can be taken back")
        last = self.transcript.messages[-1]
        if last.get("role") == "assistant":
            self.transcript.messages.pop()
        self.current.end = None
        self.state.pop("ids", None)  # token backends render the history afresh

    def step_seed(self) -> int:
        turn = len(self.transcript.turns) - 1
        return derive_seed(self.seed, "agent-step", turn, len(self.current.steps))

    def book(self, reply: Reply, seed: int | None, *, single_step: bool = False) -> list[ToolCall]:
        """Record ``reply``; return the calls the environment must run now (may be none)."""
        turn_no, step_no = len(self.transcript.turns) - 1, len(self.current.steps)
        calls: list[CallRecord] = []
        errors: list[str] = []
        ids = list(reply.call_ids) + [None] * (len(reply.calls) - len(reply.call_ids))
        for k, (call, given) in enumerate(zip(reply.calls, ids, strict=True)):
            if isinstance(call, ToolCallError):
                errors.append(call.reason)
                continue
            cid = given or f"call_{turn_no}_{step_no}_{k}"
            calls.append(CallRecord(cid, call.name, dict(call.arguments)))
        message: Message = {"role": "assistant", "content": reply.text}
        if calls:
            message["tool_calls"] = [c.as_message_call() for c in calls]
        self.transcript.messages.append(message)
        step = StepRecord(reply.text, tuple(calls), tuple(errors), (), reply.finish_reason,
                          seed, reply.output_tokens, reply.raw_calls)
        self.current.steps.append(step)
        if reply.finish_reason == "context":
            self.current.end = END_CONTEXT
            self.stopped = True
            return []
        if single_step:
            self.current.end = END_SINGLE_STEP
            return []
        if not calls:
            self.current.end = END_NO_CALL
            return []
        return [ToolCall(c.name, c.arguments) for c in calls]

    def book_decided(self, reply: Reply, seed: int | None, decision: Decision | None, *,
                     max_steps: int) -> None:
        """Record ``reply`` as read by the suite (``decision``: the calls it decoded and ran,
        None for a reply that never came because the prompt did not fit). Nothing but the
        results goes back to the model: no parse notes, as in the reference loop. A native
        reply stays in the history as the server sent it (its calls' arguments strings and
        ids, malformed ones included), as a function-calling harness appends the server's
        message; the results answer the calls by those ids."""
        turn_no, step_no = len(self.transcript.turns) - 1, len(self.current.steps)
        given = [c[0] or f"call_{turn_no}_{step_no}_{k}"
                 for k, c in enumerate(reply.raw_calls or ())]
        calls = tuple(
            CallRecord(given[k] if k < len(given) else f"call_{turn_no}_{step_no}_{k}",
                       name, dict(args))
            for k, (name, args) in enumerate(decision.calls if decision else ()))
        message: Message = {"role": "assistant", "content": reply.text}
        if reply.raw_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": raw}}
                for cid, (_, name, raw) in zip(given, reply.raw_calls, strict=True)]
        elif calls:
            message["tool_calls"] = [c.as_message_call() for c in calls]
        self.transcript.messages.append(message)
        results = decision.results if decision else ()
        self.current.steps.append(StepRecord(reply.text, calls, (), tuple(results),
                                             reply.finish_reason, seed, reply.output_tokens,
                                             reply.raw_calls))
        if reply.finish_reason == "context" or decision is None:
            self.current.end = END_CONTEXT
            self.stopped = True
            return
        if not calls:
            self.current.end = decision.end or END_NO_CALL
            return
        for call, result in zip(calls, results, strict=True):
            self.transcript.messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name,
                 "content": str(result)})
        if self.current.calling_steps > max_steps:
            self.current.end = END_STEP_CAP
            self.stopped = True

    def deliver(self, results: Sequence[str], *, max_steps: int) -> None:
        """Feed the environment's answers to the last step's calls back as tool messages."""
        step = self.current.steps[-1]
        if len(results) != len(step.calls):
            raise RuntimeError(f"{len(results)} results for {len(step.calls)} calls")
        self.current.steps[-1] = replace(step, results=tuple(str(r) for r in results))
        for call, result in zip(step.calls, results, strict=True):
            self.transcript.messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name,
                 "content": str(result)}
            )
        for reason in step.errors:
            self.transcript.messages.append(
                {"role": "tool", "content": f"Error: your tool call could not be parsed: "
                 f"{reason.rstrip('. ')}."}
            )
        if self.current.calling_steps > max_steps:
            self.current.end = END_STEP_CAP
            self.stopped = True
