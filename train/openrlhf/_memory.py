"""Per-GPU memory and disk of an OpenRLHF run, from the recipe and the model's shape.

What dominates at long context is not the weights but OpenRLHF's full-vocabulary logits:
``Actor.forward`` casts the model's bf16 logits ``[tokens, vocab]`` to fp32 before taking
log-probs (``models/actor.py``), so a micro-batch of ``T`` packed tokens holds
``T x vocab x (2 + 4)`` bytes in the log-prob pass, and the training step keeps the fp32
logits for the backward pass and adds their fp32 and bf16 gradients
(``T x vocab x (4 + 4 + 2)``). How many tokens a micro-batch holds is OpenRLHF's:

- without dynamic batching, ``micro_batch_size`` padded sequences of up to ``max_len``;
- with dynamic batching (``--train.dynamic_batch_enable``), sequences are packed first-fit
  up to ``max_tokens_per_gpu`` and a longer sequence is a micro-batch of its own; the
  log-prob pass then rounds the number of micro-batches DOWN to a multiple of the actor
  count (``experience_maker.split_rollout_samples``), so one of its micro-batches can hold
  up to about twice the cap; the training step's do not (``replay_buffer``).

Ring attention (``--ds.ring_attn_size R``) splits a micro-batch's tokens over R GPUs, so
each holds 1/R of its logits; ZeRO then shards over the ``gpus / R`` data-parallel ranks,
and Adam offload moves the fp32 master weights and moments to CPU memory.
Gradient checkpointing keeps one hidden state per layer plus one layer's recomputed
activations (about ``34 x tokens x hidden`` bytes with flash attention). Model states
follow ZeRO (bf16 weights and gradients, fp32 master weights and Adam moments: 16 bytes
per parameter in all). The vLLM engines sleep while the actor trains (colocated runs), so
generation and training are separate phases. A rough estimate, meant to catch settings
that cannot fit; ``benchmarks/gpu_check.py`` measures the real numbers on a GPU.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spade.train.recipe import TrainRecipe

__all__ = ["ModelShape", "disk_estimate", "memory_estimate", "microbatch_tokens",
           "model_shape"]

GIB = 1024.0 ** 3
#: Bytes per logit: the log-prob pass (bf16 output + its fp32 copy) and a training step
#: (fp32 logits kept for backward + fp32 and bf16 gradients).
LOGPROB_BYTES_PER_LOGIT = 2 + 4
TRAIN_BYTES_PER_LOGIT = 4 + 4 + 2
#: Activation bytes of one transformer layer per token, per unit of hidden width (flash
#: attention: no sequence-squared term).
LAYER_ACTIVATION_BYTES = 34


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs of a model."""

    num_params: float
    vocab_size: int
    hidden_size: int
    num_layers: int


def model_shape(recipe: TrainRecipe) -> ModelShape | None:
    """From the recipe's ``model`` fields, else the model directory's ``config.json`` when
    it is here; None when neither says."""
    m = recipe.model
    fields = (m.num_params, m.vocab_size, m.hidden_size, m.num_layers)
    if all(f is not None for f in fields):
        return ModelShape(float(m.num_params or 0), int(m.vocab_size or 0),
                          int(m.hidden_size or 0), int(m.num_layers or 0))
    try:
        from pathlib import Path

        config = json.loads((Path(m.resolved_path()) / "config.json").read_text("utf-8"))
    except Exception:  # no directory here (a dry run on a laptop): say so, do not guess
        return None
    if m.num_params is None:
        return None
    return ModelShape(float(m.num_params), int(m.vocab_size or config["vocab_size"]),
                      int(m.hidden_size or config["hidden_size"]),
                      int(m.num_layers or config["num_hidden_layers"]))


def microbatch_tokens(recipe: TrainRecipe) -> dict[str, int]:
    """Upper bounds of the tokens in one micro-batch (all of its ring-attention group's
    GPUs together): the log-prob pass's and the training step's (see the module
    docstring)."""
    c, g = recipe.cluster, recipe.grpo
    if c.max_tokens_per_gpu is None:
        padded = g.micro_batch_size * c.max_len
        return {"logprob": padded, "train": padded}
    cap = c.max_tokens_per_gpu * c.ring_attn_size  # OpenRLHF scales the cap by the ring
    actors = c.gpus // c.ring_attn_size
    logprob = cap * (2 if actors > 1 else 1)
    return {"logprob": max(logprob, c.max_len), "train": max(cap, c.max_len)}


def _states_gib(n: float, gpus: int, stage: int, offload: bool) -> dict[str, float]:
    weights, grads, optim = 2 * n, 2 * n, 0.0 if offload else 12 * n
    if stage >= 1:
        optim /= gpus
    if stage >= 2:
        grads /= gpus
    if stage >= 3:
        weights /= gpus
    return {"weights": weights / GIB, "gradients": grads / GIB, "optimizer": optim / GIB}


def memory_estimate(recipe: TrainRecipe, shape: ModelShape | None = None) -> dict[str, Any]:
    """Per-GPU peak of the log-prob pass and of a training step, in GiB."""
    shape = shape or model_shape(recipe)
    c = recipe.cluster
    tokens = {k: -(-v // c.ring_attn_size) for k, v in microbatch_tokens(recipe).items()}
    if shape is None:
        return {"tokens_per_gpu": tokens,
                "note": "no model shape (set model.num_params, vocab_size, hidden_size, "
                        "num_layers, or make the model directory readable)"}
    shards = c.gpus // c.ring_attn_size  # ZeRO partitions over the data-parallel ranks
    states = _states_gib(shape.num_params, shards, c.zero_stage, c.adam_offload)
    reference = 0.0
    if recipe.grpo.kl_coef > 0:
        reference = 2 * shape.num_params / (shards if c.zero_stage >= 3 else 1) / GIB
    base = sum(states.values()) + reference
    per_layer = LAYER_ACTIVATION_BYTES * shape.hidden_size / GIB

    def activations(t: int) -> float:
        if recipe.model.gradient_checkpointing:
            return (shape.num_layers * 2 * shape.hidden_size / GIB + per_layer) * t
        return shape.num_layers * per_layer * t

    logprob_logits = tokens["logprob"] * shape.vocab_size * LOGPROB_BYTES_PER_LOGIT / GIB
    train_logits = tokens["train"] * shape.vocab_size * TRAIN_BYTES_PER_LOGIT / GIB
    logprob = base + logprob_logits + per_layer * tokens["logprob"]
    train = base + train_logits + activations(tokens["train"])
    peak = max(logprob, train)
    return {
        "tokens_per_gpu": tokens,
        "model_states_gib": {k: round(v, 2) for k, v in states.items()},
        "reference_gib": round(reference, 2),
        "logprob_pass": {"logits_gib": round(logprob_logits, 2), "peak_gib": round(logprob, 2)},
        "train_step": {"logits_gib": round(train_logits, 2),
                       "activations_gib": round(activations(tokens["train"]), 2),
                       "peak_gib": round(train, 2)},
        "peak_gib": round(peak, 2),
        "gpu_memory_gib": c.gpu_memory_gb,
        "fits": peak <= c.gpu_memory_gb * 0.9,
        "generation_gib": round(c.vllm_gpu_memory_utilization * c.gpu_memory_gb, 1),
    }


def disk_estimate(recipe: TrainRecipe, shape: ModelShape | None = None) -> dict[str, Any]:
    """Disk the run's checkpoints take at most, in GB (10^9 bytes)."""
    n = (shape or model_shape(recipe) or ModelShape(recipe.model.num_params or 0, 1, 1, 1)
         ).num_params
    if not n:
        return {"note": "no parameter count (model.num_params)"}
    hf = 2 * n / 1e9  # one bf16 safetensors export
    deepspeed = 14 * n / 1e9  # bf16 weights + fp32 master weights + two Adam moments
    kept = recipe.checkpoint.keep_last + 1  # the best one may be outside the last ones
    in_flight = 2  # an export being written while the previous one waits to be published
    total = hf * (kept + in_flight) + deepspeed * recipe.checkpoint.keep_last
    return {"hf_export_gb": round(hf, 1), "deepspeed_state_gb": round(deepspeed, 1),
            "published_kept": kept, "deepspeed_kept": recipe.checkpoint.keep_last,
            "total_gb": round(total, 1)}
