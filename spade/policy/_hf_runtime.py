"""The torch-side sampling loop of the hf backend; imported only when an HFPolicy generates.

Why not ``model.generate``: it samples every row from the one global generator, so a row's
sample depends on which other rows share its batch and in what order. Here each row owns a
``torch.Generator`` seeded with its request's seed and draws exactly one uniform per step,
so its tokens depend only on its prompt, its seed and the model. The loop is the usual
incremental decode (one forward over the left-padded prompts, then one token per step over
the KV cache, finished rows dropped from the cache). Rows with the same prompt (the G
samples of one designer prompt) share one prompt pass: each distinct prompt is encoded
once and its cache rows are copied to every row that samples from it. Distinct prompts
that open alike (the agent's system prompt, a suite's instructions: 95 of a held-out
family prompt's ~133 tokens) encode that opening once too.

Residual effect of batching: padding and batch shape change the floating-point order of
the matmuls, so a row's logits may differ from its unbatched logits in the last bits
(about 1e-6 relative in float32). A sample changes only when a uniform lands within that
distance of a boundary between two tokens' cumulative probabilities, which is rare but
not impossible; greedy decoding changes only on exact logit ties. Sampling follows
transformers' warpers (temperature, then top-k, then top-p keeping at least one token).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from spade.policy._openings import plan_openings


def _generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A row's own stream; unseeded rows draw their seed from torch's global generator."""
    if seed is None:
        seed = int(torch.randint(0, 2**62, ()).item())
    g = torch.Generator(device=device)
    g.manual_seed(int(seed) % (1 << 64))
    return g


def _warp(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    scores = logits / temperature
    if 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p < 1.0:
        ordered, index = torch.sort(scores, descending=False, dim=-1)
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
        drop = cumulative <= (1 - top_p)
        drop[..., -1:] = False
        scores = scores.masked_fill(drop.scatter(-1, index, drop), float("-inf"))
    return scores


def _draw(probs: torch.Tensor, generators: Sequence[torch.Generator]) -> torch.Tensor:
    """One token per row by inverse CDF, each row with one uniform from its own generator."""
    u = torch.stack([torch.rand((), generator=g, device=probs.device) for g in generators])
    cdf = probs.cumsum(dim=-1)
    target = (u * cdf[:, -1]).unsqueeze(-1)
    index = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return index.clamp(max=probs.shape[-1] - 1)


def _forward_names(model: Any) -> tuple[str, bool, bool]:
    """(name of the cache argument, takes position_ids, takes logits_to_keep).

    transformers renamed ``past_key_values`` to ``cache``; both spellings are supported.
    """
    try:
        names = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        names = {}  # type: ignore[assignment]
    cache = "cache" if "cache" in names else "past_key_values"
    return cache, "position_ids" in names, "logits_to_keep" in names


def _shared_prompts(prompts: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """(index of each distinct prompt's first row, each row's distinct-prompt number):
    rows with the same prompt (G samples of one prompt) share one prompt pass."""
    seen: dict[tuple[int, ...], int] = {}
    firsts: list[int] = []
    copies: list[int] = []
    for row, prompt in enumerate(prompts):
        key = tuple(prompt)
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(row)
        copies.append(seen[key])
    return firsts, copies


def _step_kwargs(names: tuple[str, bool, bool], cache: Any, positions: torch.Tensor
                 ) -> dict[str, Any]:
    cache_name, with_positions, with_keep = names
    kwargs: dict[str, Any] = {cache_name: cache, "use_cache": True}
    if with_positions:
        kwargs["position_ids"] = positions
    if with_keep:
        kwargs["logits_to_keep"] = 1
    return kwargs


def _left_padded(rows: Sequence[Sequence[int]], pad_id: int, device: Any
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask) of ``rows`` left-padded to the longest."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row):] = 1
    return ids.to(device), mask.to(device)


def _prompt_pass(model: Any, prompts: Sequence[Sequence[int]], ids: torch.Tensor,
                 mask: torch.Tensor, positions: torch.Tensor, names: tuple[str, bool, bool],
                 pad_id: int) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """The forward over the distinct prompts: (output, attention mask, positions) to decode
    from. Prompts that open alike (:mod:`spade.policy._openings`) have each shared opening
    encoded once, its cache rows copied to the rows that share it, and then each row's own
    tokens, left-padded: the mask holds padding between the two and the positions skip it."""
    plan = plan_openings(prompts) if names[1] else None
    if plan is None:
        return model(input_ids=ids, attention_mask=mask,
                     **_step_kwargs(names, None, positions)), mask, positions
    device = ids.device
    group = plan.group_of(len(prompts))
    heads = [prompts[rows[0]][:n] for rows, n in zip(plan.groups, plan.lengths, strict=True)]
    head_ids, head_mask = _left_padded(heads, pad_id, device)
    out = model(input_ids=head_ids, attention_mask=head_mask,
                **_step_kwargs(names, None, (head_mask.cumsum(-1) - 1).clamp(min=0)))
    cache = getattr(out, "cache", None) or out.past_key_values
    index = torch.tensor(group, dtype=torch.long, device=device)
    cache.batch_select_indices(index)
    opened = [plan.lengths[g] for g in group]
    tail_ids, tail_mask = _left_padded([p[n:] for p, n in zip(prompts, opened, strict=True)],
                                       pad_id, device)
    mask = torch.cat([head_mask[index], tail_mask], dim=1)
    start = torch.tensor(opened, dtype=torch.long, device=device)[:, None]
    positions = start + (tail_mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=tail_ids, attention_mask=mask, **_step_kwargs(names, cache, positions))
    return out, mask, positions


def generate_batch(
    model: Any,
    prompts: list[list[int]],
    *,
    pad_id: int,
    eos_ids: Sequence[int],
    budgets: Sequence[int],
    seeds: Sequence[int | None],
    temperature: float,
    top_k: int,
    top_p: float,
    stopped: Callable[[list[int]], bool] | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """Sample each row up to its EOS (kept), its budget, or ``stopped(row)`` being true.

    Log-probs are ``log softmax(logits / T)`` of the raw logits for each sampled token.
    """
    device = model.device
    n = len(prompts)
    ids, mask = _left_padded(prompts, pad_id, device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    generators = [_generator(s, device) for s in seeds]
    eos = torch.tensor(sorted(set(eos_ids)), dtype=torch.long, device=device)
    rows: list[list[int]] = [[] for _ in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    live = [r for r in range(n) if budgets[r] > 0]
    sample, t = temperature > 0, temperature if temperature > 0 else 1.0
    cache_name, with_positions, with_keep = _forward_names(model)
    cache: Any = None
    step_ids = ids
    if len(live) < n:
        step_ids, mask, positions = ids[live], mask[live], positions[live]
    firsts, copies = _shared_prompts([prompts[r] for r in live])
    if len(firsts) < len(live):  # encode each distinct prompt once
        step_ids, mask, positions = step_ids[firsts], mask[firsts], positions[firsts]
    names = (cache_name, with_positions, with_keep)
    distinct = [prompts[live[f]] for f in firsts]
    with torch.inference_mode():
        while live:
            if cache is None:
                out, mask, positions = _prompt_pass(model, distinct, step_ids, mask, positions,
                                                    names, pad_id)
            else:
                out = model(input_ids=step_ids, attention_mask=mask,
                            **_step_kwargs(names, cache, positions))
            cache = getattr(out, "cache", None) or out.past_key_values
            logits = out.logits[:, -1, :].float()
            if logits.shape[0] < len(live):  # the prompt pass: one cache row per copy
                index = torch.tensor(copies, dtype=torch.long, device=device)
                cache.batch_select_indices(index)
                logits, mask, positions = logits[index], mask[index], positions[index]
            if sample:
                probs = _warp(logits, temperature, top_k, top_p).softmax(dim=-1)
                tokens = _draw(probs, [generators[r] for r in live])
            else:
                tokens = logits.argmax(dim=-1)
            lp = torch.log_softmax(logits / t, dim=-1).gather(1, tokens[:, None]).squeeze(1)
            ended = torch.isin(tokens, eos).tolist()
            keep: list[int] = []
            for k, r in enumerate(live):
                rows[r].append(int(tokens[k]))
                logprobs[r].append(float(lp[k]))
                if not (ended[k] or len(rows[r]) >= budgets[r] or (stopped and stopped(rows[r]))):
                    keep.append(k)
            if len(keep) < len(live):
                if not keep:
                    break
                index = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(index)
                tokens, mask, positions = tokens[index], mask[index], positions[index]
                live = [live[k] for k in keep]
            step_ids = tokens[:, None]
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            positions = positions[:, -1:] + 1
    return rows, logprobs
