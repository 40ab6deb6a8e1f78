"""A deterministic, model-free policy for tests, benchmarks and the scripted self-play demo.

It implements both tiers with a trivial reversible tokenizer (one id per character plus
three special ids), so the token-level episode runner can run end to end without a model:
``render`` writes a ChatML-like transcript, ``generate`` decodes the prompt back into
messages, asks the ``respond`` callable for the reply and encodes it. Log-probs are zeros.

Determinism: the reply may depend on a ``random.Random`` seeded, through SHA-256, from the
request's own seed (``per_request`` gives each row one) and its prompt ids, like a real
backend's per-request stream: equal seeds and prompts give equal outputs across processes
and batch compositions, and identical prompts with different seeds (a GRPO group) may
differ. Unseeded requests count as seed 0, so a test double stays reproducible.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from spade.errors import UserError
from spade.policy._stops import first_stop
from spade.policy._types import (
    BatchParams,
    Generation,
    Message,
    SamplingParams,
    per_request,
    split_prefill,
)

PAD, IM_START, IM_END = 0, 1, 2
_OFFSET = 3  # character c has id ord(c) + _OFFSET
_SPECIAL_TEXT = {PAD: "<pad>", IM_START: "<|im_start|>", IM_END: "<|im_end|>"}
_SPECIAL_ID = {text: i for i, text in _SPECIAL_TEXT.items()}
_SPECIAL_SPLIT = re.compile("(" + "|".join(map(re.escape, _SPECIAL_ID)) + ")")

Respond = Callable[..., str]
"""``respond(messages)`` or ``respond(messages, rng)`` -> reply text."""


def _encode(text: str) -> list[int]:
    return [ord(c) + _OFFSET for c in text]


def _turn(role: str, content: str) -> list[int]:
    return [IM_START, *_encode(f"{role}\n{content}"), IM_END, *_encode("\n")]


def _accepts_rng(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(k in positional for k in kinds) >= 2


class ScriptedPolicy:
    """``ChatPolicy`` and ``TokenPolicy`` driven by a Python callable instead of a model."""

    def __init__(
        self, respond: Respond, name: str = "scripted", context_window: int = 32768
    ) -> None:
        if not callable(respond):
            raise UserError("ScriptedPolicy needs a callable respond(messages[, rng]) -> str")
        self._respond = respond
        self._with_rng = _accepts_rng(respond)
        self.name = name
        self._context_window = context_window

    @classmethod
    def from_rules(
        cls,
        rules: Sequence[tuple[str, str | Callable[[list[Message]], str]]],
        default: str = "",
        name: str = "scripted",
    ) -> ScriptedPolicy:
        """Reply with the first rule whose regex matches the last message's content."""
        compiled = [(re.compile(pattern), reply) for pattern, reply in rules]

        def respond(messages: list[Message]) -> str:
            last = str(messages[-1].get("content", "")) if messages else ""
            for pattern, reply in compiled:
                if pattern.search(last):
                    return reply(messages) if callable(reply) else reply
            return default

        return cls(respond, name=name)

    @property
    def context_window(self) -> int:
        return self._context_window

    # -- token level ------------------------------------------------------------------
    def render(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        ids: list[int] = []
        if tools:
            ids += _turn("system", "# Tools\n" + json.dumps(list(tools), sort_keys=True))
        head, prefill = split_prefill(messages)
        for message in head:
            ids += _turn(str(message["role"]), str(message.get("content") or ""))
        return [*ids, IM_START, *_encode("assistant\n" + prefill)]

    def continuation(self, messages: Sequence[Message], previous: Generation) -> list[int]:
        closed = bool(previous.token_ids) and previous.token_ids[-1] == IM_END
        ids = [] if closed else [IM_END]
        ids += _encode("\n")
        for message in messages:
            ids += _turn(str(message["role"]), str(message.get("content") or ""))
        return [*ids, IM_START, *_encode("assistant\n")]

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in _SPECIAL_SPLIT.split(text):
            ids += [_SPECIAL_ID[part]] if part in _SPECIAL_ID else _encode(part)
        return ids

    def decode(self, token_ids: Sequence[int]) -> str:
        return "".join(_SPECIAL_TEXT[i] if i < _OFFSET else chr(i - _OFFSET) for i in token_ids)

    def parse(self, token_ids: Sequence[int]) -> list[Message]:
        """Messages of a rendered transcript. A trailing open assistant turn is dropped,
        unless it holds a prefill: then it is the last message (what the reply continues)."""
        messages: list[Message] = []
        current: list[int] | None = None
        for i in token_ids:
            if i == IM_START:
                current = []
            elif i == IM_END:
                if current is not None:
                    role, _, content = self.decode(current).partition("\n")
                    messages.append({"role": role, "content": content})
                current = None
            elif current is not None:
                current.append(i)
        if current:
            role, _, content = self.decode(current).partition("\n")
            if role == "assistant" and content:
                messages.append({"role": role, "content": content})
        return messages

    def generate(
        self, prompts: Sequence[Sequence[int]], params: BatchParams
    ) -> list[Generation]:
        if isinstance(params, SamplingParams) and params.seed is None:
            params = replace(params, seed=0)
        rows = per_request(params, len(prompts))
        return [
            self._reply(self.parse(prompt), list(prompt), row)
            for prompt, row in zip(prompts, rows, strict=True)
        ]

    # -- text level -------------------------------------------------------------------
    def chat(
        self, conversations: Sequence[Sequence[Message]], params: BatchParams
    ) -> list[Generation]:
        return self.generate([self.render(c) for c in conversations], params)

    # -- internals --------------------------------------------------------------------
    def _rng(self, prompt: list[int], params: SamplingParams) -> random.Random:
        digest = hashlib.sha256(json.dumps([params.seed or 0, prompt]).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _reply(self, messages: list[Message], prompt: list[int], params: SamplingParams
               ) -> Generation:
        if self._with_rng:
            text = self._respond(messages, self._rng(prompt, params))
        else:
            text = self._respond(messages)
        if not isinstance(text, str):
            raise TypeError(f"scripted respond returned {type(text).__name__}, expected str")
        if len(prompt) >= self._context_window:  # like the hf backend: reported, not empty
            return Generation("", (), (), "prompt_too_long")
        budget = max(0, min(params.max_new_tokens, self._context_window - len(prompt)))
        stop = first_stop(text, params.stop)
        if stop is not None:
            cut, end = stop
            ids = _encode(text[:end])
            if len(ids) <= budget:
                return Generation(text[:cut], tuple(ids), (0.0,) * len(ids), "stop")
        ids = [*_encode(text), IM_END]
        if len(ids) > budget:
            ids = ids[:budget]
            return Generation(text[:budget], tuple(ids), (0.0,) * len(ids), "length")
        return Generation(text, tuple(ids), (0.0,) * len(ids), "stop")
