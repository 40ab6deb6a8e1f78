"""Batching efficiency of the hf policy: its batched ``generate`` vs raw ``model.generate``.

Both sides get the same prompts as one left-padded batch, the same ``max_new_tokens`` and
greedy decoding, so they produce the same tokens; the policy's extra work (per-token
log-probs, trimming, bookkeeping) shows up as lost throughput. Repeats are interleaved and
the best time of each side is kept, which damps noise from other processes on the machine.
Target: efficiency >= 0.8. Prints one JSON object when run as a script.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

_TOPICS = [
    "prime numbers", "the water cycle", "binary search", "photosynthesis", "chess openings",
    "the Pythagorean theorem", "recursion", "volcanoes", "sorting algorithms", "magnets",
    "fractions", "the moon", "hash tables", "rainbows", "probability", "bridges",
]  # fmt: skip


def _prompts(n: int) -> list[list[dict[str, str]]]:
    topics = [_TOPICS[i % len(_TOPICS)] for i in range(n)]
    return [
        [{"role": "user", "content": f"Explain {topic} in {1 + i % 4} sentences."}]
        for i, topic in enumerate(topics)
    ]


def _count(rows: list[list[int]], eos: frozenset[int]) -> int:
    """Generated tokens per row up to and including the first EOS (the policy's trimming)."""
    total = 0
    for row in rows:
        cut = next((k + 1 for k, t in enumerate(row) if t in eos), len(row))
        total += cut
    return total


def measure_hf_batching(
    model_dir: str | Path | None = None,
    n_prompts: int = 32,
    max_new_tokens: int = 32,
    repeats: int = 2,
    device: str = "cpu",
    batch1: bool = True,
    num_threads: int | None = None,
) -> dict[str, Any]:
    """Throughput of ``HFPolicy.generate`` vs raw ``model.generate``; SmolLM2 by default.

    Returns ``hf_batching_efficiency`` (policy tokens/s over raw tokens/s) with the raw
    numbers, or ``hf_batching_efficiency: None`` and a ``reason`` when no model can run.
    ``num_threads`` sets torch's intra-op threads for the measurement only.
    """
    from spade.errors import UserError

    try:
        import torch

        from spade.policy import HFPolicy, prepare_smollm2

        path = Path(model_dir) if model_dir else prepare_smollm2()
        policy = HFPolicy.from_path(path, device=device)
    except (ImportError, UserError) as exc:
        return {"hf_batching_efficiency": None, "reason": f"model unavailable: {exc}"}
    threads = torch.get_num_threads()
    if num_threads:
        torch.set_num_threads(num_threads)
    try:
        return _measure(policy, n_prompts, max_new_tokens, repeats, batch1)
    finally:
        torch.set_num_threads(threads)


def _measure(
    policy: Any, n_prompts: int, max_new_tokens: int, repeats: int, batch1: bool
) -> dict[str, Any]:
    import torch

    from spade.policy import SamplingParams

    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    prompts = [policy.render(c) for c in _prompts(n_prompts)]
    eos = policy.template.eos_ids
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), policy.pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, p in enumerate(prompts):
        ids[row, width - len(p) :] = torch.tensor(p)
        mask[row, width - len(p) :] = 1
    ids, mask = ids.to(policy.model.device), mask.to(policy.model.device)

    def raw() -> list[list[int]]:
        with torch.inference_mode():
            out = policy.model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=policy.pad_id,
                eos_token_id=sorted(eos),
            )
        return [list(r) for r in out[:, width:].tolist()]

    def timed(fn: Any) -> tuple[float, Any]:
        start = time.perf_counter()
        result = fn()
        return time.perf_counter() - start, result

    policy.generate(prompts[:2], SamplingParams(temperature=0.0, max_new_tokens=2))  # warm-up
    policy_s, raw_s = float("inf"), float("inf")
    gens: Any = None
    rows: Any = None
    for _ in range(max(1, repeats)):
        t, gens = timed(lambda: policy.generate(prompts, params))
        policy_s = min(policy_s, t)
        t, rows = timed(raw)
        raw_s = min(raw_s, t)
    policy_tokens = sum(len(g.token_ids) for g in gens)
    raw_tokens = _count(rows, eos)
    result: dict[str, Any] = {
        "hf_batching_efficiency": round((policy_tokens / policy_s) / (raw_tokens / raw_s), 4),
        "policy_tokens_per_s": round(policy_tokens / policy_s, 2),
        "raw_tokens_per_s": round(raw_tokens / raw_s, 2),
        "policy_wall_s": round(policy_s, 4),
        "raw_wall_s": round(raw_s, 4),
        "generated_tokens": policy_tokens,
        "raw_generated_tokens": raw_tokens,
        "outputs_identical": [list(g.token_ids) for g in gens]
        == [r[: len(g.token_ids)] for g, r in zip(gens, rows, strict=True)],
        "n_prompts": n_prompts,
        "max_new_tokens": max_new_tokens,
        "repeats": repeats,
        "model": policy.name,
        "device": str(policy.model.device),
        "torch_threads": torch.get_num_threads(),
    }
    if batch1:
        best = float("inf")
        tokens = 0
        for _ in range(max(1, repeats)):
            t, one = timed(lambda: policy.generate(prompts[:1], params))
            best, tokens = min(best, t), len(one[0].token_ids)
        result["batch1_tokens_per_s"] = round(tokens / best, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None, help="local model dir (default: SmolLM2)")
    parser.add_argument("--n-prompts", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--no-batch1", action="store_true", help="skip the batch-1 figure")
    args = parser.parse_args()
    result = measure_hf_batching(
        args.model_dir,
        args.n_prompts,
        args.max_new_tokens,
        args.repeats,
        args.device,
        batch1=not args.no_batch1,
        num_threads=args.threads,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
