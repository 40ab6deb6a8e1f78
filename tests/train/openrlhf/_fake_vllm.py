"""A stand-in for vLLM's async engine (vLLM needs a GPU): the same ``generate`` coroutine
(token ids in, a ``RequestOutput``-shaped object out), sampling with a real model through
SPADE's HF policy, one seeded stream per request like vLLM's ``SamplingParams(seed=...)``."""

from __future__ import annotations

import asyncio
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.train.openrlhf import SlotLabel


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


def install(monkeypatch: Any) -> None:
    """Make ``from vllm import SamplingParams`` resolve to :class:`SamplingParams`."""
    module = types.ModuleType("vllm")
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _Completion:
    token_ids: list[int]
    text: str
    finish_reason: str
    logprobs: list[dict[int, _Logprob]] | None


@dataclass
class RequestOutput:
    outputs: list[_Completion]
    prompt_token_ids: list[int] = field(default_factory=list)


class FakeEngine:
    """``await generate(prompt_token_ids, sampling_params)`` over a local HF model."""

    def __init__(self, model_dir: Any) -> None:
        from spade.policy import HFPolicy

        self.policy = HFPolicy.from_path(model_dir, device="cpu")
        self.tokenizer = self.policy.tokenizer
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
            lps = [{t: _Logprob(lp)} for t, lp in zip(g.token_ids, g.logprobs, strict=True)]
        reason = "length" if g.finish_reason == "length" else "stop"
        return RequestOutput([_Completion(list(g.token_ids), g.text, reason, lps)], list(ids))

    async def generate(self, prompt_token_ids: list[int], sampling_params: SamplingParams,
                       multi_modal_data: Any = None) -> RequestOutput:
        return await asyncio.to_thread(self._one, list(prompt_token_ids), sampling_params)


def run_steps(executor: Any, engine: FakeEngine, run_dir: Path, recipe: Any,
               steps: int) -> list[list[list[dict[str, Any]]]]:
    """``steps`` OpenRLHF steps on one event loop (an actor's loop lives as long as the
    actor): every ticket slot per step, ``group_size`` concurrent calls each. ``executor``
    may be a list: slot ``k`` then goes to executor ``k mod n``, as OpenRLHF spreads
    prompts over several vLLM actors (each with its own runtime)."""
    g = recipe.grpo
    executors = executor if isinstance(executor, list) else [executor]

    async def one_step() -> list[list[dict[str, Any]]]:
        async def slot(k: int) -> list[dict[str, Any]]:
            label = SlotLabel(str(run_dir), k).to_json()
            calls = [executors[k % len(executors)].execute(f"SPADE ticket slot {k}", label,
                                      SamplingParams(logprobs=1), 4096, engine.tokenizer,
                                      engine) for _ in range(g.group_size)]
            return list(await asyncio.gather(*calls))

        return list(await asyncio.gather(*(slot(k) for k in range(g.tickets_per_step))))

    async def go() -> list[list[list[dict[str, Any]]]]:
        return [await one_step() for _ in range(steps)]

    return asyncio.run(go())
