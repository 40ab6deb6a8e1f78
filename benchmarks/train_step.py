"""Seconds per training step of the CPU demo recipe, its split, and SPADE's overhead on TRL.

Runs, each in its own process (so peak RSS is its own):

- ``spade``: ``spade train`` machinery on the cpu_demo recipe (SmolLM2-135M-Instruct,
  designer and agent tickets, sandbox, TRL update) for ``--steps`` steps; per-step split
  from ``metrics.jsonl`` (generation, environment, validation, update).
- ``trl``: a plain ``trl.GRPOTrainer`` step on the same model with the same batch (samples
  per step, group size, micro-batch, completion budget) and a single-turn reward
  (``small_sum`` answers scored by a Python function; no sandbox, no tickets).

Prints one JSON object: seconds per step, tokens per second in generation and update,
peak RSS, and the ratio spade/trl.

    python benchmarks/train_step.py [--steps 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def spade_part(steps: int, run_dir: Path) -> dict[str, Any]:
    from train import load_recipe
    from train._run import run_training

    recipe = load_recipe("cpu_demo").with_overrides(steps=steps, tensorboard=False)
    began = time.perf_counter()
    summary = run_training(recipe, run_dir, say=lambda _: None)
    wall = time.perf_counter() - began
    lines = [json.loads(x) for x in summary.metrics_path.read_text().splitlines()]
    per_step = []
    for m in lines:
        t, tok = m["timing_s"], m["tokens"]
        sampled = tok["designer"] + tok["agent"]
        per_step.append({
            "step": m["step"], "step_s": t["step_s"], "generation_s": t["generation_s"],
            "environment_s": t["environment_s"], "validation_s": t["validation_s"],
            "update_s": t["update_s"], "rollout_s": t["rollout_s"],
            "sampled_tokens": sampled,
            "update_tokens": sampled + tok["masked"] + tok["prompt"],
            "designer_tickets": bool(m["designer"]),
        })
    return {"steps": per_step, "wall_s": wall, "peak_rss_mb": _rss_mb(),
            "samples_per_step": recipe.grpo.samples_per_step}


def trl_part(steps: int, out_dir: Path) -> dict[str, Any]:
    """The same model and batch through plain TRL with a one-turn reward."""
    import re

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from train import load_recipe
    from train._models import load_model, resolve_model_dir

    recipe = load_recipe("cpu_demo")
    g, a = recipe.grpo, recipe.selfplay.agent
    model, tok = load_model(resolve_model_dir(recipe.model), "cpu", "float32")
    prompts = [[{"role": "user", "content": f"What is {i % 9 + 1} + {i % 7 + 2}? "
                 "Reply with only the number in \\boxed{}."}] for i in range(64)]

    def reward(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        out = []
        for p, c in zip(prompts, completions, strict=True):
            x, y = (int(v) for v in re.findall(r"\d+", p[-1]["content"])[:2])
            found = re.findall(r"\d+", c[-1]["content"])
            out.append(float(bool(found) and int(found[-1]) == x + y))
        return out

    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.t = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            times.append(time.perf_counter() - self.t)

    samples = g.samples_per_step
    args = GRPOConfig(output_dir=str(out_dir), max_steps=steps,
                      per_device_train_batch_size=g.micro_batch_size,
                      gradient_accumulation_steps=samples // g.micro_batch_size,
                      num_generations=g.group_size, generation_batch_size=samples,
                      max_completion_length=a.sampling.max_new_tokens,
                      temperature=recipe.temperature, learning_rate=recipe.optim.lr,
                      beta=0.0, loss_type=g.loss_type, use_cpu=True, bf16=False,
                      report_to="none", save_strategy="no", logging_steps=1,
                      disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=[reward], args=args,
                          train_dataset=Dataset.from_dict({"prompt": prompts}),
                          callbacks=[Timer()])
    began = time.perf_counter()
    trainer.train()
    return {"step_s": times, "wall_s": time.perf_counter() - began, "peak_rss_mb": _rss_mb(),
            "samples_per_step": samples, "max_completion_length": a.sampling.max_new_tokens}


def _child(part: str, steps: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--part", part, "--steps", str(steps)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{part} part failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--part", choices=("spade", "trl"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spade-train-step-") as tmp:
        if args.part == "spade":
            print(json.dumps(spade_part(args.steps, Path(tmp) / "run")))
            return 0
        if args.part == "trl":
            print(json.dumps(trl_part(args.steps, Path(tmp) / "trl")))
            return 0
    spade, trl = _child("spade", args.steps), _child("trl", args.steps)
    steps = spade["steps"]
    gen_s = sum(s["generation_s"] for s in steps)
    upd_s = sum(s["update_s"] for s in steps)
    spade_step = _mean([s["step_s"] for s in steps])
    trl_step = _mean(trl["step_s"])
    print(json.dumps({
        "benchmark": "train_step", "recipe": "cpu_demo", "model": "SmolLM2-135M-Instruct",
        "steps": len(steps), "samples_per_step": spade["samples_per_step"],
        "spade": {
            "s_per_step": spade_step,
            "split_s": {k: _mean([s[k] for s in steps]) for k in
                        ("generation_s", "environment_s", "validation_s", "update_s")},
            "generation_tokens_per_s": sum(s["sampled_tokens"] for s in steps) / gen_s
            if gen_s else None,
            "update_tokens_per_s": sum(s["update_tokens"] for s in steps) / upd_s
            if upd_s else None,
            "peak_rss_mb": spade["peak_rss_mb"], "per_step": steps,
        },
        "plain_trl": {"s_per_step": trl_step, "per_step_s": trl["step_s"],
                      "peak_rss_mb": trl["peak_rss_mb"]},
        "spade_over_trl": spade_step / trl_step if spade_step and trl_step else None,
        "load_average": list(os.getloadavg()), "cpus": os.cpu_count(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
