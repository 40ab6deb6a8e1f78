"""A token-level generator over an ASYNC engine (vLLM's ``AsyncLLMEngine`` in OpenRLHF).

The rollout core is synchronous (the episode runner makes one batched ``generate`` call per
turn step). Inside an async host such as OpenRLHF's ``AgentExecutor.execute``, run it in a
worker thread (``await asyncio.to_thread(rollout.execute, ...)``) with this generator: each
``generate`` call submits one ``await engine.generate(prompt_token_ids, sampling_params)``
per request to the host's event loop and waits for all of them, so the engine batches
them with every other concurrent sample. Token ids go in and come out untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from typing import Any

from spade.policy._template import ChatTemplate, TemplatedPolicy
from spade.policy._types import BatchParams, Generation, SamplingParams, per_request

__all__ = ["AsyncEngineGenerator", "vllm_generation", "vllm_sampling_params"]


def vllm_sampling_params(p: SamplingParams) -> Any:
    """vLLM ``SamplingParams`` for one request (imported lazily: GPU hosts only)."""
    from vllm import SamplingParams as VLLMSamplingParams

    return VLLMSamplingParams(temperature=p.temperature, top_p=p.top_p, top_k=p.top_k or -1,
                              max_tokens=p.max_new_tokens, stop=list(p.stop) or None,
                              seed=p.seed, logprobs=0)


def vllm_generation(output: Any) -> Generation:
    """A vLLM ``RequestOutput`` (``.outputs[0]``) as a :class:`Generation`."""
    out = output.outputs[0]
    ids = tuple(int(i) for i in out.token_ids)
    logprobs = None
    if out.logprobs:
        logprobs = tuple(float(step[tok].logprob) for step, tok in zip(out.logprobs, ids,
                                                                      strict=True))
    reason = "length" if out.finish_reason == "length" else "stop"
    return Generation(out.text, ids, logprobs, reason)


class AsyncEngineGenerator(TemplatedPolicy):
    """``TokenPolicy`` whose ``generate`` forwards to ``engine.generate`` on ``loop``.

    ``engine.generate(prompt_token_ids, sampling_params)`` must be a coroutine returning
    the engine's output; ``make_params`` and ``to_generation`` convert to and from the
    engine's types (vLLM's by default). Call ``generate`` from a thread other than the
    loop's own (it blocks until the engine answers).
    """

    def __init__(self, engine: Any, tokenizer: Any, loop: asyncio.AbstractEventLoop, *,
                 context_window: int, name: str = "engine",
                 make_params: Callable[[SamplingParams], Any] = vllm_sampling_params,
                 to_generation: Callable[[Any], Generation] = vllm_generation) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.template = ChatTemplate(tokenizer)
        self.loop = loop
        self.name = name
        self._window = int(context_window)
        self._make_params = make_params
        self._to_generation = to_generation

    @property
    def context_window(self) -> int:
        return self._window

    def generate(self, prompts: Sequence[Sequence[int]], params: BatchParams
                 ) -> list[Generation]:
        rows = per_request(params, len(prompts))

        async def one(ids: Sequence[int], p: SamplingParams) -> Generation:
            call: Awaitable[Any] = self.engine.generate(list(ids), self._make_params(p))
            return self._to_generation(await call)

        async def all_of() -> list[Generation]:
            return list(await asyncio.gather(*(one(i, p) for i, p in zip(prompts, rows,
                                                                         strict=True))))

        future: Future[list[Generation]] = asyncio.run_coroutine_threadsafe(all_of(), self.loop)
        return future.result()
