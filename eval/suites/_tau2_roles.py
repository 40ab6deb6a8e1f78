"""The two participants of a tau2 simulation, as tau2's orchestrator expects them.

tau2's own ``Orchestrator`` runs the conversation (greeting, routing between agent, user
and environment, ``max_steps``, ``max_errors``, stop signals, tool syncing) and its own
``evaluate_simulation`` scores it; only the participants are ours:

- :class:`ModelAgent` is the evaluated model behind tau2's agent interface. It keeps an
  :class:`spade.eval.agent.AgentSession` (tool schemas, history, per-step seeds) and takes one
  step of the shared loop backend (:func:`spade.eval.agent.step_model_for`: token level for
  hf/vllm, native tools for OpenAI-compatible servers, scripts for replay and the oracle)
  each time the orchestrator asks; the orchestrator runs the calls and hands back the
  results, which the session books as tool messages. The system prompt is tau2's
  ``LLMAgent`` prompt (instruction + domain policy).
- :class:`ModelUser` is tau2's ``UserSimulator`` (its system prompt, guidelines, role
  flipping and stop tokens) with the language-model call replaced by our user model.
- :class:`GoldUser` plays the user for the oracle self-check: it performs the task's gold
  user-side actions when the gold order says so and then says ``###STOP###``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from spade.eval.agent import AgentSession, NoExecution, Reply

from spade.envs import ToolCall, format_tool_call
from spade.policy._types import Message, SamplingParams

if TYPE_CHECKING:
    from spade.eval.agent import StepModel
    from spade.eval.agent._user import UserModel
    from spade.eval.providers._base import Request

#: tau2's orchestrator counts its own steps; the session's step cap only guards runaways.
_SESSION_STEP_CAP = 10**6
STOP = "###STOP###"


def _tau2() -> Any:
    from tau2.agent import llm_agent
    from tau2.data_model import message
    from tau2.user import user_simulator

    return llm_agent, message, user_simulator


def tool_schemas(tools: Sequence[Any]) -> list[dict[str, Any]]:
    return [t.openai_schema for t in tools]


class ContextExhausted(RuntimeError):
    """The evaluated model's prompt no longer fits its context window."""


class FailedReply(RuntimeError):
    """A participant's reply that tau2's own model call or message check refuses, which its
    runner then scores as a failed trial (reward 0) when told to skip failed samples: a
    native call whose arguments are not a JSON object (``generate`` decodes every call
    with ``json.loads`` into a dict field and raises), or a reply still empty (no text,
    no call) after ``generate``'s own retries (the message's ``validate`` raises). The trial
    ends here the same way; the run goes on."""

    def __init__(self, role: str, why: str) -> None:
        super().__init__(f"the {role} {why}")
        self.role = role


def empty_retries() -> int:
    """How many times tau2's ``generate`` asks again after an empty reply."""
    from tau2.config import DEFAULT_MAX_RETRIES

    return int(DEFAULT_MAX_RETRIES)


def _is_empty(reply: Reply) -> bool:
    """tau2's test: no content (or only whitespace) and no tool calls at all."""
    return not reply.text.strip() and not reply.calls


def _check_native(reply: Reply, role: str) -> None:
    """A native call tau2 cannot decode fails the trial, whatever the other calls are."""
    if reply.raw_calls is None:
        return
    bad = [c.reason for c in reply.calls if not isinstance(c, ToolCall)]
    if bad:
        raise FailedReply(role, f"sent a tool call tau2 cannot decode ({bad[0]})")


def make_agent(tools: Sequence[Any], policy: str, model: StepModel, request: Request,
               params: SamplingParams, seed: int) -> Any:
    """A tau2 agent (subclass of tau2's ``LocalAgent``) driven by ``model``."""
    llm_agent, msg, _ = _tau2()

    class ModelAgent(llm_agent.LocalAgent):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__(tools=list(tools), domain_policy=policy)
            system = llm_agent.SYSTEM_PROMPT.format(
                domain_policy=policy, agent_instruction=llm_agent.AGENT_INSTRUCTION)
            self.session = AgentSession(env=NoExecution(), tools=tool_schemas(tools),
                                        seed=seed, request=request, system=system)

        def get_init_state(self, message_history: Any = None) -> dict[str, Any]:
            for m in message_history or []:  # the orchestrator's greeting
                self.session.transcript.messages.append(
                    {"role": m.role, "content": m.content or ""})
            return {}

        def generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
            s = self.session
            if isinstance(message, msg.MultiToolMessage):
                s.deliver([m.content or "" for m in message.tool_messages],
                          max_steps=_SESSION_STEP_CAP)
            elif isinstance(message, msg.ToolMessage):
                s.deliver([message.content or ""], max_steps=_SESSION_STEP_CAP)
            else:
                s.begin_turn([{"role": "user", "content": message.content or ""}])
            for attempt in range(empty_retries() + 1):
                if attempt:  # tau2 asks again with the same history
                    s.retract_empty()
                step_seed = s.step_seed()
                (reply,) = model.step([s], [replace(params, seed=step_seed)])
                calls = s.book(reply, step_seed)
                if s.stopped:
                    raise ContextExhausted("the agent's context window is full")
                if not _is_empty(reply):
                    break
            _check_native(reply, "agent")
            last = s.transcript.messages[-1]
            tool_calls = [msg.ToolCall(id=c["id"], name=c["function"]["name"],
                                       arguments=json.loads(c["function"]["arguments"]),
                                       requestor="assistant")
                          for c in last.get("tool_calls", [])] if calls else None
            content = reply.text if reply.text.strip() else None
            if content is None and tool_calls is None:
                raise FailedReply("agent", "sent an empty message (no text, no tool call)")
            return msg.AssistantMessage(role="assistant", content=content,
                                        tool_calls=tool_calls), state

        def set_seed(self, seed: int) -> None:
            pass  # every step samples with the session's own derived seed

    return ModelAgent()


def _as_chat(messages: Sequence[Any], calls_as_text: bool) -> list[Message]:
    """tau2 API messages (already flipped to the user's side) as chat dicts."""
    out: list[Message] = []
    for m in messages:
        role = m.role
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": m.id, "content": m.content or ""})
            continue
        entry: Message = {"role": role, "content": m.content or ""}
        calls = getattr(m, "tool_calls", None)
        if calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]
            if calls_as_text:
                entry["content"] = (entry["content"] + "".join(
                    format_tool_call(c.name, c.arguments) for c in calls)).strip()
        out.append(entry)
    return out


def make_user(tools: Sequence[Any] | None, instructions: str, user: UserModel,
              seed: int) -> Any:
    """tau2's ``UserSimulator`` whose model call goes to ``user``."""
    _, msg, user_simulator = _tau2()

    class ModelUser(user_simulator.UserSimulator):  # type: ignore[name-defined]
        calls = 0

        def _generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
            if isinstance(message, msg.MultiToolMessage):
                state.messages.extend(message.tool_messages)
            else:
                state.messages.append(message)
            messages = state.system_messages + state.flip_roles()
            chat = _as_chat(messages, calls_as_text=not user.native_tools)
            schemas = tool_schemas(self.tools) if self.tools else []
            for _ in range(empty_retries() + 1):  # tau2 asks again after an empty reply
                reply: Reply = user.reply(chat, seed=_step_seed(seed, self.calls),
                                          tools=schemas)
                self.calls += 1
                if not _is_empty(reply):
                    break
            _check_native(reply, "user")
            valid = [c for c in reply.calls if isinstance(c, ToolCall)]
            tool_calls = [msg.ToolCall(id=f"user_{self.calls}_{k}", name=c.name,
                                       arguments=dict(c.arguments), requestor="user")
                          for k, c in enumerate(valid)] or None
            text = reply.text if reply.text.strip() else None
            if text is None and tool_calls is None:
                raise FailedReply("user", "sent an empty message (no text, no tool call)")
            out = msg.UserMessage(role="user", content=text, tool_calls=tool_calls)
            state.messages.append(out)
            return out, state

        def set_seed(self, seed: int) -> None:
            pass

    return ModelUser(tools=tools, instructions=instructions, llm="spade-user", llm_args={})


def _step_seed(seed: int, k: int) -> int:
    from spade.seeds import derive_seed

    return derive_seed(seed, "tau2-user", k)


def make_gold_user(task: Any) -> Any:
    """The oracle's user: the task's gold user-side actions in gold order, then stop."""
    _, msg, user_simulator = _tau2()
    actions = list(task.evaluation_criteria.actions or [])

    class GoldUser(user_simulator.UserSimulator):  # type: ignore[name-defined]
        cursor = 0

        def _generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
            # the agent says how many gold actions it has done; run ours up to the next one
            done = _progress(message)
            if done is not None:
                self.cursor = max(self.cursor, done)
            k = self.cursor
            if k < len(actions) and actions[k].requestor == "user":
                a = actions[k]
                self.cursor += 1
                call = msg.ToolCall(id=f"gold_user_{k}", name=a.name,
                                    arguments=dict(a.arguments), requestor="user")
                return msg.UserMessage(role="user", tool_calls=[call]), state
            if k >= len(actions) and done is not None:
                return msg.UserMessage(role="user", content=STOP), state
            return msg.UserMessage(role="user", content=f"[gold user] done {k}"), state

        def set_seed(self, seed: int) -> None:
            pass

    return GoldUser(tools=None, instructions=str(task.user_scenario), llm="gold", llm_args={})


def _progress(message: Any) -> int | None:
    text = getattr(message, "content", None) or ""
    marker = "[gold agent] done "
    if marker in text:
        try:
            return int(text.split(marker, 1)[1].split()[0])
        except (IndexError, ValueError):
            return None
    return None


def oracle_script(task: Any) -> str:
    """The gold episode for the evaluated side, in the loop's script form.

    Turn t (after the user's t-th message): the gold agent actions up to the next user
    action, then a message telling the user how far the gold list is done (the gold user
    then runs the user actions that follow and answers); the final message also carries
    every ``communicate_info`` string.
    """
    actions = list(task.evaluation_criteria.actions or [])
    info = [str(x) for x in (task.evaluation_criteria.communicate_info or [])]
    turns: list[list[Any]] = [[]]
    k = 0
    while True:
        while k < len(actions) and actions[k].requestor == "assistant":
            a = actions[k]
            turns[-1].append({"content": "", "tool_calls": [
                {"id": f"gold_{k}", "name": a.name, "arguments": dict(a.arguments)}]})
            k += 1
        if k >= len(actions):
            turns[-1].append(f"[gold agent] done {k} " + " ".join(info))
            break
        turns[-1].append(f"[gold agent] done {k}")
        while k < len(actions) and actions[k].requestor == "user":
            k += 1
        turns.append([])
    return json.dumps({"turns": turns}, ensure_ascii=False)
