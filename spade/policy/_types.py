"""The generation contract shared by every backend (scripted, hf, vllm, openai).

Two tiers. ``ChatPolicy`` is text level (messages in, text out): enough for a frozen
designer, a hint writer or a user simulator behind an API. ``TokenPolicy`` adds the
token-in/token-out calls the episode runner needs for training: earlier turns are never
re-tokenised from text, so the ids a trainer sees are exactly the ids that were sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]  # {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings for one batched call. ``top_k=0`` and ``top_p=1.0`` mean off."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class Generation:
    """One sampled completion."""

    text: str
    token_ids: tuple[int, ...] = ()  # empty for text-level backends
    logprobs: tuple[float, ...] | None = None  # one per token id, when the backend has them
    finish_reason: str = "stop"  # "stop" | "length"


@runtime_checkable
class ChatPolicy(Protocol):
    """Text-level generation over chat messages."""

    name: str

    def chat(
        self, conversations: Sequence[Sequence[Message]], params: SamplingParams
    ) -> list[Generation]:
        """Generate one reply per conversation, batched."""
        ...


@runtime_checkable
class TokenPolicy(ChatPolicy, Protocol):
    """Token-level generation with the model's own chat template."""

    def render(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of ``messages`` plus the opening of the next assistant turn."""
        ...

    def continuation(self, messages: Sequence[Message], previous: Generation) -> list[int]:
        """Ids to append after ``previous`` (an assistant turn) to add ``messages`` and open
        the next assistant turn; closes the previous turn if it ended without end-of-turn."""
        ...

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        """Sample one completion per prompt (token ids in, token ids out), batched."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str: ...

    @property
    def context_window(self) -> int: ...
