"""Model backends for the loop: token-level (hf, vllm), native tools (OpenAI-compatible
servers, see ``_native``) and scripted (replay, oracle).

- **Token level.** The first prompt is the chat template rendered with the tool schemas
  (``tools=``); each later step appends the sampled ids and the template's continuation
  for the new messages, so earlier turns are never re-tokenised. Templates that ignore
  ``tools=`` get the schemas in a system message instead (``templates/tools_system.md``,
  the Qwen wording). When the tools change between turns the prompt is rendered afresh
  with the new list (the system block is the only place tools can be shown). A session
  with ``tools_as_block`` always gets the block (BFCL's Qwen3 FC protocol). A session whose
  suite renders the whole prompt as its reference harness does (``prompt_text``, set by the
  loop) gets that text encoded as it stands, every step: the harness's own history, not the
  sampled ids. Replies are parsed with :func:`spade.envs.parse_tool_calls` (``<tool_call>``
  JSON or XML form).
- **Scripted.** Providers that answer by key return one completion per episode: a JSON
  script ``{"turns": [[step, ...], ...]}`` where a step is the reply text (parsed like a
  model's) or a native reply ``{"content", "tool_calls": [{"id"?, "name", "arguments"}]}``
  (``arguments`` as the server's string, or an object).
  A turn's list ends where the model stopped (later steps are empty replies); a script
  with fewer turns than the episode is an error, never a silent zero.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from spade.eval.agent._records import Transcript
from spade.eval.agent._session import AgentSession, Reply

from spade.envs import ToolCall, ToolCallError, parse_tool_calls
from spade.errors import UserError
from spade.policy._types import Generation, Message, SamplingParams, TokenPolicy

if TYPE_CHECKING:
    from spade.eval.providers._base import Provider

_PROBE_TOOL = {"type": "function", "function": {
    "name": "probe_tool_7f3a", "description": "probe",
    "parameters": {"type": "object", "properties": {}}}}


class StepModel(Protocol):
    """Produces one reply per session for the current step, batched."""

    name: str

    def step(
        self, sessions: Sequence[AgentSession], params: Sequence[SamplingParams]
    ) -> list[Reply]: ...


@cache
def _template(name: str) -> str:
    return resources.files("spade.eval.agent").joinpath("templates", name).read_text("utf-8")


def tools_system_text(tools: Sequence[dict[str, Any]], *, ensure_ascii: bool = False) -> str:
    """The system block listing ``tools`` for templates that do not render them (and for
    sessions that show them as bfcl-eval's Qwen3 FC handler does: ASCII-escaped JSON)."""
    lines = "\n".join(json.dumps(t, ensure_ascii=ensure_ascii) for t in tools)
    return string.Template(_template("tools_system.md")).substitute(tools=lines).strip()


def template_messages(messages: Sequence[Message]) -> list[Message]:
    """Messages as a text-level chat template takes them: the assistant's raw reply text
    (its tool-call markup is in the text), tool results by name."""
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            msg: Message = {"role": "tool", "content": str(m.get("content", ""))}
            if m.get("name"):
                msg["name"] = m["name"]
            out.append(msg)
        else:
            out.append({"role": m["role"], "content": str(m.get("content") or "")})
    return out


class TokenStepModel:
    """A :class:`~spade.policy.TokenPolicy` (hf, vllm) driving sessions token by token."""

    def __init__(self, policy: TokenPolicy) -> None:
        self.policy = policy
        self.name = policy.name
        self._renders_tools: bool | None = None

    def renders_tools(self) -> bool:
        """Whether the chat template shows ``tools=`` (probed once with a dummy tool)."""
        if self._renders_tools is None:
            probe = [{"role": "user", "content": "probe"}]
            try:
                with_tools = self.policy.render(probe, tools=[_PROBE_TOOL])
            except Exception:  # templates that refuse a tools argument
                with_tools = []
            without = self.policy.render(probe)
            self._renders_tools = bool(with_tools) and with_tools != without and (
                "probe_tool_7f3a" in self.policy.decode(with_tools))
        return self._renders_tools

    def first_prompt(self, session: AgentSession) -> list[int]:
        messages = template_messages(session.transcript.messages)
        if not session.tools:
            return self.policy.render(messages)
        if not session.tools_as_block and self.renders_tools():
            return self.policy.render(messages, tools=session.tools)
        block = tools_system_text(session.tools, ensure_ascii=session.tools_as_block)
        if messages and messages[0]["role"] == "system":
            messages[0] = {"role": "system", "content": f"{messages[0]['content']}\n\n{block}"}
        else:
            messages.insert(0, {"role": "system", "content": block})
        return self.policy.render(messages)

    def _prompt(self, session: AgentSession) -> list[int]:
        st = session.state
        if session.prompt_text is not None:
            ids = self.policy.encode(session.prompt_text)
        elif "ids" not in st or st["tools_version"] != session.tools_version:
            ids = self.first_prompt(session)
        else:
            new = template_messages(session.transcript.messages[st["upto"]:])
            ids = [*st["ids"], *self.policy.continuation(new, st["gen"])]
        st["ids"], st["tools_version"] = ids, session.tools_version
        st["upto"] = len(session.transcript.messages) + 1  # + the reply about to be booked
        return ids

    def step(
        self, sessions: Sequence[AgentSession], params: Sequence[SamplingParams]
    ) -> list[Reply]:
        prompts = [self._prompt(s) for s in sessions]
        window = self.policy.context_window
        runnable = [i for i, p in enumerate(prompts) if len(p) < window]
        replies: list[Reply] = [Reply("", finish_reason="context")] * len(sessions)
        if runnable:
            gens = self.policy.generate([prompts[i] for i in runnable],
                                        [params[i] for i in runnable])
            for i, gen in zip(runnable, gens, strict=True):
                st = sessions[i].state
                st["ids"] = [*st["ids"], *gen.token_ids]
                st["gen"] = gen
                replies[i] = Reply(gen.text, tuple(parse_tool_calls(gen.text)),
                                   finish_reason=gen.finish_reason,
                                   output_tokens=len(gen.token_ids))
        return replies


def native_call(name: str, raw: str) -> ToolCall | ToolCallError:
    """A native call as the harness's loop takes it: the arguments must be a JSON object
    (an empty string is not one: official function-calling decoders fail it too)."""
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCallError(raw, f"arguments of {name} are not JSON: {exc}")
    if not isinstance(args, dict) or not name:
        return ToolCallError(raw, f"arguments of {name} are not a JSON object")
    return ToolCall(name, args)


def _as_calls(raw: Sequence[Any]) -> tuple[tuple[ToolCall | ToolCallError, ...],
                                           tuple[str | None, ...],
                                           tuple[tuple[str | None, str, str], ...]]:
    """Scripted native calls: ``arguments`` a string (as a server sends it) or an object."""
    calls: list[ToolCall | ToolCallError] = []
    ids: list[str | None] = []
    raws: list[tuple[str | None, str, str]] = []
    for c in raw:
        if not isinstance(c, dict):
            raise UserError(f"a scripted tool call is an object, not {type(c).__name__}")
        name, args = c.get("name"), c.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        raws.append((c.get("id"), str(name), text))
        calls.append(native_call(name, text) if isinstance(name, str)
                     else ToolCallError(json.dumps(c), "a call needs a name"))
        ids.append(c.get("id"))
    return tuple(calls), tuple(ids), tuple(raws)


def script_step(entry: Any) -> Reply:
    """A :class:`Reply` from one scripted step: text (read like a model's text), or an
    object with ``content`` and native ``tool_calls``."""
    if isinstance(entry, str):
        return Reply(entry, tuple(parse_tool_calls(entry)))
    if not isinstance(entry, dict):
        raise UserError(f"a scripted step is a string or an object, not {type(entry).__name__}")
    calls, ids, raws = _as_calls(entry.get("tool_calls") or [])
    errors = tuple(ToolCallError("", str(e)) for e in entry.get("errors") or [])
    return Reply(str(entry.get("content") or ""), calls + errors,
                 ids + (None,) * len(errors), raw_calls=raws)


def encode_script(transcript: Transcript) -> str:
    """The completion that replays ``transcript`` exactly (see the module docstring): a
    text reply as its text (read again as it was), a native one as the server sent it."""
    turns = [[s.text if s.raw_calls is None else
              {"content": s.text,
               "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in s.raw_calls]}
              for s in t.steps] for t in transcript.turns]
    return json.dumps({"turns": turns}, ensure_ascii=False, sort_keys=True)


class ScriptedStepModel:
    """Steps from a keyed provider's per-episode script (replay files, the oracle)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.name = provider.spec

    def _script(self, session: AgentSession) -> list[list[Any]]:
        if "script" not in session.state:
            if session.request is None:
                raise RuntimeError("a scripted session needs its request")
            text = self.provider.generate([session.request])[0].text
            where = f"{session.request.suite.id} id={session.request.item.key}"
            try:
                data = json.loads(text)
                turns = data["turns"]
                if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
                    raise TypeError("turns must be a list of lists")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise UserError(f"{self.name}: {where}: not an episode script ({exc})") from None
            session.state["script"] = turns
        script: list[list[Any]] = session.state["script"]
        return script

    def step(
        self, sessions: Sequence[AgentSession], params: Sequence[SamplingParams]
    ) -> list[Reply]:
        out = []
        for s in sessions:
            script = self._script(s)
            turn, step = len(s.transcript.turns) - 1, len(s.current.steps)
            if turn >= len(script):
                assert s.request is not None
                raise UserError(
                    f"{self.name}: {s.request.suite.id} id={s.request.item.key} sample="
                    f"{s.request.sample}: the script has {len(script)} turn(s), the episode "
                    f"reached turn {turn + 1}")
            steps = script[turn]
            out.append(script_step(steps[step]) if step < len(steps) else Reply(""))
        return out


def step_model_for(provider: Provider) -> StepModel:
    """The loop backend for a provider: token level, native tools, or scripted."""
    from spade.eval.providers._policy import PolicyProvider

    if not isinstance(provider, PolicyProvider):
        return ScriptedStepModel(provider)
    policy = provider.policy
    if all(callable(getattr(policy, a, None)) for a in ("render", "continuation", "generate")):
        return TokenStepModel(policy)  # type: ignore[arg-type]
    from spade.policy._openai import OpenAIPolicy

    if isinstance(policy, OpenAIPolicy):
        from spade.eval.agent._native import NativeStepModel

        return NativeStepModel(policy)
    raise UserError(f"provider {provider.spec} cannot act through tool calls")


__all__ = ["Generation", "ScriptedStepModel", "StepModel", "TokenStepModel", "step_model_for"]
