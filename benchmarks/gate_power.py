"""Power of the regression gate: the smallest drop it detects at its default settings.

Simulation: each item has a true accuracy p_i ~ Uniform(0, 1) (a spread of difficulties);
the reference samples every item K times at p_i, the candidate at max(0, p_i - drop). The
gate's own functions compare the simulated items and decide (one-sided paired sign-flip
p < alpha, drop >= max(min_effect, z_(1-alpha) x sampling SE)); one gated suite, so no Holm
factor (with m suites gated together the smallest p is multiplied by up to m). Power = share
of simulated pairs called "worse"; the reported figure is the smallest drop, on a one-point
grid, with power >= 80%. The false alarm rate at drop 0 is reported as well. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

import numpy as np
from spade.eval._runs import ItemStat
from spade.eval.regress._gate import WORSE, GateConfig, compare_items, decide

#: (suite shape, items, samples per item at the paper protocol)
SHAPES = (("aime (30 items x 64 samples)", 30, 64), ("gpqa_diamond (198 items x 8)", 198, 8),
          ("30 items x 8 samples", 30, 8))


def _items(scores: np.ndarray) -> dict[str, ItemStat]:
    """Per-item statistics of 0/1 samples (rows: items), as the gate reads them from a run
    (ids sort in row order, the order the gate pairs items in)."""
    k = scores.shape[1]
    var = scores.var(axis=1, ddof=1) if k > 1 else [None] * len(scores)
    return {f"{i:05d}": ItemStat(float(m), k, None if v is None else float(v), None)
            for i, (m, v) in enumerate(zip(scores.mean(axis=1), var, strict=True))}


def _worse(rng: np.random.Generator, n: int, k: int, drop: float, cfg: GateConfig,
           n_flips: int) -> bool:
    p = rng.uniform(0.0, 1.0, n)
    ref = rng.binomial(1, p[:, None], (n, k)).astype(float)
    cand = rng.binomial(1, np.clip(p - drop, 0.0, 1.0)[:, None], (n, k)).astype(float)
    seeded = replace(cfg, seed=int(rng.integers(1 << 31)))
    comparison = compare_items("simulated", _items(ref), _items(cand), seeded, n_flips=n_flips)
    [decided] = decide([comparison], cfg.alpha)
    return decided.verdict == WORSE


def power_table(reps: int, n_flips: int, seed: int) -> dict[str, Any]:
    cfg = GateConfig()
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for name, n, k in SHAPES:
        grid: dict[str, float] = {}
        smallest = None
        for step in range(0, 31):
            drop = step / 100
            power = sum(_worse(rng, n, k, drop, cfg, n_flips) for _ in range(reps)) / reps
            grid[f"{drop:.2f}"] = power
            if step and power >= 0.8:
                smallest = drop
                break
        out[name] = {"items": n, "samples": k, "false_alarm_rate_at_0": grid["0.00"],
                     "smallest_drop_with_80pct_power": smallest, "power_by_drop": grid}
    return {"alpha": cfg.alpha, "min_effect": cfg.min_effect, "reps": reps,
            "n_flips": n_flips, "seed": seed, "suites": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--n-flips", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps(power_table(args.reps, args.n_flips, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
