"""The torch-side pieces of the hf backend; imported only when an HFPolicy generates."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList


class LogprobRecorder(LogitsProcessor):
    """Records log p(sampled token) under softmax(logits / T), one step late.

    A logits processor sees the scores of step t before sampling and the token sampled at
    step t-1 as the last input id, so it keeps one (batch, vocab) tensor instead of every
    step's logits (``output_logits`` would hold batch x steps x vocab floats). Custom
    processors run before transformers' temperature/top-k/top-p warpers, so the scores seen
    here are the model's raw logits.
    """

    def __init__(self, temperature: float) -> None:
        self._t = temperature if temperature > 0 else 1.0
        self._prev: torch.Tensor | None = None
        self._steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> Any:
        if self._prev is not None:
            self._steps.append(self._prev.gather(1, input_ids[:, -1:]).squeeze(1))
        self._prev = torch.log_softmax(scores.float() / self._t, dim=-1)
        return scores

    def finish(self, last_tokens: torch.Tensor) -> torch.Tensor:
        """(batch, steps) log-probs, given the tokens sampled at the final step."""
        if self._prev is not None:
            self._steps.append(self._prev.gather(1, last_tokens.view(-1, 1)).squeeze(1))
            self._prev = None
        if not self._steps:
            return torch.zeros((last_tokens.shape[0], 0))
        return torch.stack(self._steps, dim=1).cpu()


@contextlib.contextmanager
def seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Seed torch for one call and restore the caller's RNG state afterwards.

    ``generate`` samples with the global generator, so a local generator is not an option;
    forking keeps the seeding from leaking into the rest of the process.
    """
    if seed is None:
        yield
        return
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def generate_batch(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    pad_id: int,
    eos_ids: list[int],
    max_new_tokens: int,
    temperature: float,
    top_k: int,
    top_p: float,
    stop: list[str],
) -> tuple[list[list[int]], list[list[float]]]:
    """Left-pad one batch, run ``model.generate``, return new ids and log-probs per row."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    sample = temperature > 0
    config = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=sample,
        temperature=temperature if sample else 1.0,
        top_k=top_k if sample and top_k > 0 else None,
        top_p=top_p if sample else 1.0,
        repetition_penalty=1.0,
        num_beams=1,
        pad_token_id=pad_id,
        eos_token_id=eos_ids,
        stop_strings=stop or None,
    )
    recorder = LogprobRecorder(temperature)
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids.to(model.device),
            attention_mask=mask.to(model.device),
            generation_config=config,
            logits_processor=LogitsProcessorList([recorder]),
            tokenizer=tokenizer if stop else None,
        )
    new = out[:, width:]
    logprobs = recorder.finish(new[:, -1]) if new.shape[1] else torch.zeros((len(prompts), 0))
    return new.cpu().tolist(), logprobs.tolist()
