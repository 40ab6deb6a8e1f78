"""Learning check: does GRPO through the whole SPADE loop make the agent better?

Trains SmolLM2-135M-Instruct agent-only with the ``learning`` recipe on the bundled game
``small_sum`` (``spade train`` machinery: tickets, sandbox, TRL, checkpoints), then plays
the trained checkpoint and a frozen copy of the base model side by side on held-out seeds
that training never used, with the same sampling seeds (paired). The one-sided paired
test is the regression gate's sign-flip permutation test on the per-seed differences of
the solve rate (H1: trained > frozen). Prints one JSON object.

    python benchmarks/learning.py [--steps 8] [--heldout 64] [--samples 1] [--run-dir DIR]

Rerunning with the same --run-dir resumes the training part. On a machine shared with
other jobs, ``OMP_NUM_THREADS=1`` avoids thread oversubscription (several times faster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ENV = "small_sum"
HELDOUT_BASE = 900_000_000  # held-out reset seeds start here (training seeds are hashed)


def _solve(policy: Any, seeds: list[int], samples: int, temperature: float,
           max_new_tokens: int) -> list[float]:
    """Per held-out seed: the fraction of ``samples`` plays won (sampling seeds paired)."""
    from spade.train.envs import learning_env_source

    from spade.cycle._pool import HandlePool
    from spade.episodes import EpisodeConfig, EpisodeJob, run_episodes
    from spade.policy import SamplingParams
    from spade.sandbox import Sandbox
    from spade.seeds import derive_seed

    wins = [0.0] * len(seeds)
    with Sandbox("bwrap") as sandbox, HandlePool(sandbox, {ENV: learning_env_source(ENV)}) as pool:
        for i in range(samples):
            params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens,
                                    seed=derive_seed(0, "learning-heldout", i))
            plays = run_episodes(policy, [EpisodeJob(ENV, s) for s in seeds], pool, params,
                                 EpisodeConfig(max_turns=1, max_active=64))
            for k, p in enumerate(plays):
                wins[k] += float(p.won) / samples
    return wins


def _training_seeds(recipe: Any) -> set[int]:
    from spade.train import plan_steps

    return {t.env_seed(j) for t in plan_steps(recipe, recipe.steps) for j in range(t.group_size)}


def run(steps: int, heldout: int, samples: int, run_dir: Path) -> dict[str, Any]:
    from spade.eval.regress import sign_flip_pvalue
    from spade.train import load_recipe
    from spade.train._checkpoint import checkpoint_steps, step_dir
    from spade.train._run import run_training

    from spade.policy import HFPolicy, prepare_smollm2
    from spade.textfile import read_jsonl

    recipe = load_recipe("learning").with_overrides(steps=steps)
    sampling = recipe.selfplay.agent.sampling
    training = _training_seeds(recipe)
    seeds = [s for s in range(HELDOUT_BASE, HELDOUT_BASE + 2 * heldout) if s not in training]
    seeds = seeds[:heldout]
    began = time.perf_counter()
    cache = run_dir.parent / f"{run_dir.name}.frozen-{len(seeds)}x{samples}.json"
    if cache.is_file():  # the frozen model's plays do not change: a rerun reuses them
        frozen_wins = json.loads(cache.read_text())["wins"]
    else:
        frozen = HFPolicy.from_path(prepare_smollm2(), device="cpu")
        frozen_wins = _solve(frozen, seeds, samples, sampling.temperature,
                             sampling.max_new_tokens)
        del frozen
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"seeds": seeds, "wins": frozen_wins}))
    t_frozen = time.perf_counter() - began
    summary = run_training(recipe, run_dir, say=lambda text: print(text, file=sys.stderr),
                           report=lambda s, m: print(
                               f"step {s}: solve {m['agent']['solve_rate_unhinted']} "
                               f"({m['timing_s']['step_s']:.0f}s)", file=sys.stderr))
    t_train = time.perf_counter() - began - t_frozen
    final = checkpoint_steps(run_dir)[-1]
    trained = HFPolicy.from_path(step_dir(run_dir, final), device="cpu")
    trained_wins = _solve(trained, seeds, samples, sampling.temperature, sampling.max_new_tokens)
    metrics = read_jsonl(summary.metrics_path)
    diffs = [t - f for t, f in zip(trained_wins, frozen_wins, strict=True)]
    return {
        "benchmark": "learning",
        "env": ENV,
        "model": "SmolLM2-135M-Instruct",
        "recipe": recipe.name,
        "steps": final,
        "samples_per_step": recipe.grpo.samples_per_step,
        "lr": recipe.optim.lr,
        "heldout_seeds": len(seeds),
        "samples_per_seed": samples,
        "base_solve_rate": metrics[0]["agent"]["solve_rate_unhinted"],
        "frozen_solve_rate": sum(frozen_wins) / len(seeds),
        "trained_solve_rate": sum(trained_wins) / len(seeds),
        # H1 trained > frozen is the gate's "less" on frozen - trained
        "p_value": sign_flip_pvalue([-d for d in diffs], n_flips=100_000, alternative="less"),
        "test": "one-sided paired sign-flip permutation test over held-out seeds",
        "curve": [{"step": m["step"], "solve_rate": m["agent"]["solve_rate_unhinted"],
                   "return": m["agent"]["return_unhinted"],
                   "zero_variance_groups": m["zero_variance"]["agent"]["n_zero_variance"],
                   "loss": m.get("train", {}).get("loss"),
                   "step_s": m["timing_s"].get("step_s")} for m in metrics],
        "time_s": {"frozen_eval": round(t_frozen, 1), "train": round(t_train, 1),
                   "total": round(time.perf_counter() - began, 1)},
        "load_average": list(os.getloadavg()),
        "torch_threads": __import__("torch").get_num_threads(),
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--heldout", type=int, default=64)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--run-dir", type=Path, default=Path("runs/benchmarks/learning"))
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    result = run(args.steps, args.heldout, args.samples, args.run_dir)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
