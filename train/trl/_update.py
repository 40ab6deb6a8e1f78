"""What one micro-batch of the GRPO update costs: only real tokens, bounded memory.

TRL pads every sample of a step to the step's longest prompt and completion, so a step
that mixes a few long designer samples (a long prompt, hundreds of generated tokens)
with short agent plays runs every micro-batch at the designer's width; and on a device
without Triton its fused LM head scores every position of the sequence (prompt and
padding included) through the full vocabulary. Here, per micro-batch:

- columns that are padding in every row are dropped (``trim_padding``);
- rows are sorted by length into sub-batches of at most ``forward_tokens`` tokens
  (rows x longest row), each with its own forward and backward pass, so activation
  memory follows the sub-batch, not the micro-batch (``sub_batches``); a row longer than
  the budget runs alone with gradient checkpointing;
- log-probabilities and entropies are computed at the completion tokens only, in
  vocabulary tiles (``completion_logps``), with TRL's own chunked kernel.

The loss (``dapo``: a sum over tokens divided by the step's token count) is a sum over
rows, so sub-batch gradients add up to the micro-batch's; the metrics TRL logs per
micro-batch are merged back into one value per micro-batch (``merge_metrics``), so
the logged numbers are those of the unsplit computation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["completion_logps", "merge_metrics", "select_rows", "sub_batches", "trim_padding"]

#: Vocabulary columns per LM-head tile: tokens x this x 4 bytes per temporary.
VOCAB_TILE = 8192
#: Metrics TRL logs as a mean over the micro-batch's trained tokens.
_TOKEN_MEANS = frozenset({"entropy", "kl", "clip_ratio/low_mean", "clip_ratio/high_mean",
                          "clip_ratio/region_mean"})
_MINIMA = frozenset({"clip_ratio/low_min"})
_MAXIMA = frozenset({"clip_ratio/high_max"})
#: Every metric a split micro-batch may log (anything else: the micro-batch is not split).
MERGEABLE = _TOKEN_MEANS | _MINIMA | _MAXIMA
_PROMPT_KEYS = ("prompt_ids", "prompt_mask")


def _rows(inputs: dict[str, Any]) -> int:
    return int(inputs["completion_ids"].size(0))


def trim_padding(inputs: dict[str, Any]) -> dict[str, Any]:
    """The micro-batch without the columns that are padding in every row: prompts are
    left-padded, completions right-padded, to the whole step's longest."""
    prompt_mask, completion_mask = inputs["prompt_mask"], inputs["completion_mask"]
    width = completion_mask.size(1)
    used = torch.nonzero(prompt_mask.any(0))
    start = int(used[0]) if used.numel() else prompt_mask.size(1) - 1
    used = torch.nonzero(completion_mask.any(0))
    end = int(used[-1]) + 1 if used.numel() else 1
    if start == 0 and end == width:
        return inputs
    out = dict(inputs)
    for key in _PROMPT_KEYS:
        out[key] = inputs[key][:, start:]
    for key, value in inputs.items():
        if (key not in _PROMPT_KEYS and isinstance(value, torch.Tensor) and value.dim() >= 2
                and value.size(1) == width):
            out[key] = value[:, :end]
    return out


def splittable(inputs: dict[str, Any]) -> bool:
    """Whether every per-row value is a tensor (text-only batches; images are not split)."""
    rows = _rows(inputs)
    return all(isinstance(v, torch.Tensor) or v is None or not _per_row(v, rows)
               for v in inputs.values())


def _per_row(value: Any, rows: int) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == rows


def select_rows(inputs: dict[str, Any], rows: Sequence[int]) -> dict[str, Any]:
    """The sub-batch of ``rows`` (per-row tensors indexed, step-level values kept),
    trimmed to its own padding."""
    n = _rows(inputs)
    index = torch.tensor(list(rows), dtype=torch.long, device=inputs["completion_ids"].device)
    out = {k: (v.index_select(0, index) if isinstance(v, torch.Tensor) and v.dim() >= 1
               and v.size(0) == n else v) for k, v in inputs.items()}
    return trim_padding(out)


def sub_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Row indices, longest first, packed while rows x longest row <= ``budget``
    (a row longer than the budget is a sub-batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    out: list[list[int]] = []
    for i in order:
        if out and (len(out[-1]) + 1) * lengths[out[-1][0]] <= budget:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def row_lengths(inputs: dict[str, Any]) -> list[int]:
    """Real tokens of each row: prompt plus completion up to its last real token."""
    prompt = inputs["prompt_mask"].sum(1)
    mask = inputs["completion_mask"]
    cols = torch.arange(1, mask.size(1) + 1, device=mask.device)
    completion = (mask * cols).amax(1)
    return [int(p) + int(c) for p, c in zip(prompt, completion, strict=True)]


def _plain_head(model: Any) -> bool:
    """A head whose logits are ``hidden @ W.T (+ b)``: no scale or softcap to apply."""
    cfg = model.config.get_text_config()
    scaled = ("final_logit_softcapping", "logit_scale", "output_multiplier",
              "lm_head_multiplier", "logits_scaling")
    return not any(getattr(cfg, k, None) is not None for k in scaled)


def completion_logps(model: Any, input_ids: Any, attention_mask: Any, keep: int,
                     temperature: float, entropy: bool) -> tuple[Any, Any] | None:
    """Per-token log-probs (and entropies) of the last ``keep`` tokens, computed from the
    backbone's hidden states at those positions only; ``None`` for a model this does not
    cover (the caller falls back to TRL's path)."""
    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    if not _plain_head(model) or getattr(model, "peft_config", None):
        return None
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask,
                              use_cache=False).last_hidden_state
    hidden = hidden[:, -keep - 1:-1]
    targets = input_ids[:, -keep:]
    mask = attention_mask[:, -keep:].bool()
    head = model.get_output_embeddings()
    hidden = hidden.to(head.weight.device)
    outputs = ("log_probs", "entropy") if entropy else ("log_probs",)
    logps, ent, *_ = ChunkedLogProbFunction.apply(
        hidden[mask], head.weight, head.bias, targets[mask].to(head.weight.device), temperature,
        VOCAB_TILE, None, 1.0, outputs)
    full = logps.new_zeros(mask.shape).masked_scatter(mask, logps)
    ent_full = None if ent is None else ent.new_zeros(mask.shape).masked_scatter(mask, ent)
    return full, ent_full


def merge_metrics(metrics: dict[str, list[float]], marks: dict[str, int],
                  weights: Sequence[float]) -> None:
    """Replace what each sub-batch appended since ``marks`` (list lengths before the
    micro-batch) by the micro-batch's value: token means weighted by each sub-batch's
    trained tokens, minima and maxima over sub-batches."""
    for key, values in metrics.items():
        new = values[marks.get(key, 0):]
        if len(new) <= 1:
            continue
        if len(new) != len(weights) or key not in MERGEABLE:
            raise RuntimeError(f"metric {key!r}: cannot merge {len(new)} sub-batch values")
        if key in _TOKEN_MEANS:
            total = max(sum(weights), 1.0)
            value = sum(v * w for v, w in zip(new, weights, strict=True)) / total
        else:
            finite = [v for v in new if not math.isnan(v)]
            value = (min(finite) if key in _MINIMA else max(finite)) if finite else math.nan
        del values[marks.get(key, 0):]
        values.append(value)
