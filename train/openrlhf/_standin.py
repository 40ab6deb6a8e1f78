"""vLLM's async engine answered by SPADE's HF policy, where vLLM cannot run: the CPU tests
of the OpenRLHF executor and the one-device GPU check (``benchmarks/gpu_check.py``).

The same ``generate`` coroutine OpenRLHF's executor awaits (token ids in, a
``RequestOutput``-shaped object out), one seeded stream per request like vLLM's
``SamplingParams(seed=...)``.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade.policy import HFPolicy


@dataclass
class SamplingParams:
    """The fields of ``vllm.SamplingParams`` the rollout sets."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = 16
    stop: list[str] | None = None
    seed: int | None = None
    logprobs: int | None = None


@dataclass
class Logprob:
    logprob: float


@dataclass
class Completion:
    token_ids: list[int]
    text: str
    finish_reason: str
    logprobs: list[dict[int, Logprob]] | None


@dataclass
class RequestOutput:
    outputs: list[Completion]
    prompt_token_ids: list[int] = field(default_factory=list)


class PolicyEngine:
    """``await generate(prompt_token_ids, sampling_params)`` answered by ``policy``;
    ``requests`` lists every request's prompt ids and seed, in the order they ran."""

    def __init__(self, policy: HFPolicy) -> None:
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.requests: list[tuple[list[int], int | None]] = []
        self._lock = threading.Lock()

    def _one(self, ids: list[int], p: SamplingParams) -> RequestOutput:
        from spade.policy import SamplingParams as Ours

        ours = Ours(temperature=p.temperature, top_p=p.top_p, top_k=max(0, p.top_k),
                    max_new_tokens=p.max_tokens or 16, stop=tuple(p.stop or ()), seed=p.seed)
        with self._lock:
            self.requests.append((list(ids), p.seed))
            [g] = self.policy.generate([ids], ours)
        lps = None
        if p.logprobs is not None and g.logprobs is not None:
            lps = [{t: Logprob(lp)} for t, lp in zip(g.token_ids, g.logprobs, strict=True)]
        reason = "length" if g.finish_reason == "length" else "stop"
        return RequestOutput([Completion(list(g.token_ids), g.text, reason, lps)], list(ids))

    async def generate(self, prompt_token_ids: list[int], sampling_params: SamplingParams,
                       multi_modal_data: Any = None) -> RequestOutput:
        return await asyncio.to_thread(self._one, list(prompt_token_ids), sampling_params)
