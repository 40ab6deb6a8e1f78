"""Native tool calling through an OpenAI-compatible server (``tools=`` in the request).

The server's own tool-call parser turns the model's output into ``message.tool_calls``;
the loop sees them as calls with the server's ids and feeds results back as ``tool``
messages carrying ``tool_call_id``. Requests are built and sent by the policy itself
(model, sampling, per-request seed, ``top_k`` for vLLM-style servers), so they get the same
retries (the SDK's) and one-line errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from spade.eval.agent._models import native_call
from spade.eval.agent._session import AgentSession, Reply

from spade.envs import ToolCall, ToolCallError
from spade.errors import UserError
from spade.policy._openai import OpenAIPolicy
from spade.policy._types import Message, SamplingParams


def api_messages(messages: Sequence[Message]) -> list[Message]:
    """The transcript as the chat-completions API takes it.

    Tool messages without a ``tool_call_id`` (parse-error notes of text-level calls) have
    no place in the API form and are left out.
    """
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            if m.get("tool_call_id"):
                out.append({"role": "tool", "tool_call_id": m["tool_call_id"],
                            "content": str(m.get("content", ""))})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            out.append({"role": "assistant", "content": m.get("content") or None,
                        "tool_calls": list(m["tool_calls"])})
        else:
            out.append({"role": m["role"], "content": str(m.get("content") or "")})
    return out


class NativeStepModel:
    """Steps through ``POST /chat/completions`` with ``tools``, one request per session."""

    def __init__(self, policy: OpenAIPolicy) -> None:
        self.policy = policy
        self.name = policy.name

    def _one(self, session: AgentSession, params: SamplingParams) -> Reply:
        body = self.policy.request_body(api_messages(session.transcript.messages), params)
        if session.tools:
            body["tools"] = list(session.tools)
        response = self.policy.create(body)
        if not response.choices:
            raise UserError(f"OpenAI-compatible server at {self.policy.base_url} "
                            "returned no choices")
        choice = response.choices[0]
        calls: list[ToolCall | ToolCallError] = []
        ids: list[str | None] = []
        raws: list[tuple[str | None, str, str]] = []
        for tc in choice.message.tool_calls or []:
            name, raw = str(tc.function.name or ""), tc.function.arguments or ""
            calls.append(native_call(name, raw))
            ids.append(tc.id)
            raws.append((tc.id, name, raw))
        usage = getattr(response, "usage", None)
        reason = "length" if choice.finish_reason == "length" else "stop"
        return Reply(choice.message.content or "", tuple(calls), tuple(ids), reason,
                     getattr(usage, "completion_tokens", None), raw_calls=tuple(raws))

    def step(
        self, sessions: Sequence[AgentSession], params: Sequence[SamplingParams]
    ) -> list[Reply]:
        workers = min(self.policy.concurrency, len(sessions))
        if workers <= 1:
            return [self._one(s, p) for s, p in zip(sessions, params, strict=True)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._one, sessions, params))
