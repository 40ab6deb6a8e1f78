"""Chat-template rendering and turn continuation for Hugging Face tokenizers (hf and vllm).

``A conversation ending in an assistant message is a prefill: ``render`` opens the assistant
turn and appends that message's text, so the model continues it (its ids are prompt ids).

``continuation`` must add new messages after a sampled assistant turn without
re-tokenising that turn. It renders a fixed dummy conversation followed by the new
messages, finds the end-of-turn token that closes the dummy assistant reply (located by
character offsets, so template quirks such as a newline after the end-of-turn token are
kept), and returns every id after it. The end-of-turn token itself is derived from the
template, not guessed from the model family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade.errors import SpadeError, UserError
from spade.policy._types import BatchParams, Generation, Message, split_prefill

_REPLY = "Dummy reply 7f3a."
_DUMMY: list[Message] = [
    {"role": "system", "content": "Dummy system."},
    {"role": "user", "content": "Dummy question."},
    {"role": "assistant", "content": _REPLY},
]


def _ids(encoded: Any) -> list[int]:
    """apply_chat_template / __call__ results differ across transformers versions."""
    if isinstance(encoded, dict) or hasattr(encoded, "input_ids"):
        encoded = encoded["input_ids"]
    return [int(i) for i in encoded]


class ChatTemplate:
    """Token-level rendering with a tokenizer's own chat template."""

    def __init__(
        self,
        tokenizer: Any,
        extra_eos_ids: Sequence[int] = (),
        template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise UserError("the tokenizer has no chat template; set one in tokenizer_config")
        self.tokenizer = tokenizer
        self._kwargs = dict(template_kwargs or {})
        self._dummy = list(_DUMMY)
        try:
            self._text(self._dummy, add_generation_prompt=False)
        except Exception:  # templates without a system role (they raise): drop it
            self._dummy = self._dummy[1:]
        self.eot_id, self._eot_text = self._find_eot()
        eos = {int(i) for i in extra_eos_ids}
        if tokenizer.eos_token_id is not None:
            eos.add(int(tokenizer.eos_token_id))
        eos.add(self.eot_id)
        self.eos_ids = frozenset(eos)

    def _text(self, messages: Sequence[Message], add_generation_prompt: bool, **kw: Any) -> str:
        text = self.tokenizer.apply_chat_template(
            list(messages),
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            **self._kwargs,
            **kw,
        )
        return str(text)

    def _encode(self, text: str) -> list[int]:
        return _ids(self.tokenizer(text, add_special_tokens=False))

    def _find_eot(self) -> tuple[int, str]:
        text = self._text(self._dummy, add_generation_prompt=False)
        reply_end = text.index(_REPLY) + len(_REPLY)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        special = set(self.tokenizer.all_special_ids) | set(
            getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
        )
        for token, (start, _end) in zip(enc["input_ids"], enc["offset_mapping"], strict=True):
            if start >= reply_end and int(token) in special:
                return int(token), text[start:_end]
        raise SpadeError("cannot find the end-of-turn token of this chat template")

    def render(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        kw = {"tools": list(tools)} if tools else {}
        head, prefill = split_prefill(messages)
        return self._encode(self._text(head, add_generation_prompt=True, **kw) + prefill)

    def continuation(self, messages: Sequence[Message], previous: Generation) -> list[int]:
        text = self._text([*self._dummy, *messages], add_generation_prompt=True)
        reply_end = text.index(_REPLY) + len(_REPLY)
        eot_at = text.find(self._eot_text, reply_end)
        if eot_at < 0:
            raise SpadeError("the chat template did not close the assistant turn")
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        suffix: list[int] | None = None
        for k, (start, _end) in enumerate(enc["offset_mapping"]):
            if start == eot_at and int(enc["input_ids"][k]) == self.eot_id:
                suffix = [int(i) for i in enc["input_ids"][k + 1 :]]
                break
        if suffix is None:
            suffix = self._encode(text[eot_at + len(self._eot_text) :])
        closed = bool(previous.token_ids) and previous.token_ids[-1] in self.eos_ids
        return suffix if closed else [self.eot_id, *suffix]


class TemplatedPolicy:
    """The token-level calls every tokenizer-backed policy shares (hf, vllm).

    Subclasses set ``self.tokenizer`` and ``self.template`` and implement ``generate``.
    """

    tokenizer: Any
    template: ChatTemplate

    def render(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        return self.template.render(messages, tools)

    def continuation(self, messages: Sequence[Message], previous: Generation) -> list[int]:
        return self.template.continuation(messages, previous)

    def encode(self, text: str) -> list[int]:
        return _ids(self.tokenizer(text))

    def decode(self, token_ids: Sequence[int]) -> str:
        """Full transcript text, special tokens included."""
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=False))

    def chat(
        self, conversations: Sequence[Sequence[Message]], params: BatchParams
    ) -> list[Generation]:
        return self.generate([self.render(c) for c in conversations], params)

    def generate(
        self, prompts: Sequence[Sequence[int]], params: BatchParams
    ) -> list[Generation]:
        raise NotImplementedError
