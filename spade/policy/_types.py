"""The generation contract shared by every backend (scripted, hf, vllm, openai).

Two tiers. ``ChatPolicy`` is text level (messages in, text out): enough for a frozen
designer, a hint writer or a user simulator behind an API. ``TokenPolicy`` adds the
token-in/token-out calls the episode runner needs for training: earlier turns are never
re-tokenised from text, so the ids a trainer sees are exactly the ids that were sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from spade.seeds import derive_seed

Message = dict[str, Any]  # {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings of one request. ``top_k=0`` and ``top_p=1.0`` mean off.

    ``seed`` seeds this request's own random stream: equal seeds and prompts give equal
    samples, whatever else is in the batch. ``None``: unseeded (fresh randomness).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int | None = None


#: What ``generate``/``chat`` take: one ``SamplingParams`` per request, or one for all.
BatchParams = SamplingParams | Sequence[SamplingParams]


def per_request(params: BatchParams, n: int) -> list[SamplingParams]:
    """One ``SamplingParams`` per request of an ``n``-request batch.

    A list is taken as given (its length must be ``n``). A single ``SamplingParams`` with a
    seed gives request ``i`` the seed ``derive_seed(seed, "row", i)``, so identical prompts
    in one batch still draw different samples (a GRPO group, k samples of an item); callers
    that need seeds independent of batch position pass a list.
    """
    if isinstance(params, SamplingParams):
        if params.seed is None:
            return [params] * n
        return [replace(params, seed=derive_seed(params.seed, "row", i)) for i in range(n)]
    out = list(params)
    if len(out) != n:
        raise ValueError(f"{len(out)} sampling params for {n} requests")
    for p in out:
        if not isinstance(p, SamplingParams):
            raise TypeError(f"expected SamplingParams, got {type(p).__name__}")
    return out


def split_prefill(messages: Sequence[Message]) -> tuple[list[Message], str]:
    """``(messages, "")``, or, when the last message is an assistant turn, the messages
    before it and its content: a prefill that opens the reply the model continues."""
    if messages and messages[-1].get("role") == "assistant":
        return list(messages[:-1]), str(messages[-1].get("content") or "")
    return list(messages), ""


@dataclass(frozen=True)
class Generation:
    """One sampled completion."""

    text: str
    token_ids: tuple[int, ...] = ()  # empty for text-level backends
    logprobs: tuple[float, ...] | None = None  # one per token id, when the backend has them
    #: "stop" | "length" | "prompt_too_long" (the prompt alone fills the context window;
    #: nothing was generated)
    finish_reason: str = "stop"


@runtime_checkable
class ChatPolicy(Protocol):
    """Text-level generation over chat messages."""

    name: str

    def chat(
        self, conversations: Sequence[Sequence[Message]], params: BatchParams
    ) -> list[Generation]:
        """Generate one reply per conversation, batched; ``params`` as in ``per_request``.
        A conversation ending in an assistant message asks to continue that message (the
        reply holds only the continuation); a backend that cannot raises ``UserError``."""
        ...


@runtime_checkable
class TokenPolicy(ChatPolicy, Protocol):
    """Token-level generation with the model's own chat template."""

    def render(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of ``messages`` plus the opening of the next assistant turn. A final
        assistant message is a prefill: the turn is opened with its content, unclosed."""
        ...

    def continuation(self, messages: Sequence[Message], previous: Generation) -> list[int]:
        """Ids to append after ``previous`` (an assistant turn) to add ``messages`` and open
        the next assistant turn; closes the previous turn if it ended without end-of-turn."""
        ...

    def generate(
        self, prompts: Sequence[Sequence[int]], params: BatchParams
    ) -> list[Generation]:
        """Sample one completion per prompt (token ids in, token ids out), batched;
        ``params`` as in ``per_request``."""
        ...

    def encode(self, text: str) -> list[int]:
        """Token ids of a whole prompt written as text (an evaluation harness that renders
        its own history, earlier assistant turns included): special-token markup such as
        ``<|im_start|>`` becomes its special ids, as a completions endpoint reads it."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str: ...

    @property
    def context_window(self) -> int: ...
