"""GPU smoke test of the trainer: 2 steps of the tiny recipe, figures as JSON.

On a GPU machine with OpenRLHF installed it runs the openrlhf backend (one node, every
visible GPU, one colocated vLLM engine per GPU); without OpenRLHF, or with
``--backend trl``, it runs the trl backend on one GPU and says so (``"backend"`` and
``"why"``). The batch is sized from the visible GPUs (:func:`smoke_recipe`), so OpenRLHF's
and DeepSpeed's batch checks hold on 1, 2, 4 or 8 GPUs. Prints one JSON object: what the
run proved (checked on its run directory, not assumed), step time, the share of it spent
generating, tokens per second. Meant to finish within 8 minutes; exits 2 without a GPU
(``--device cpu`` runs the trl backend on the CPU instead, for a dry run of the script).

    python benchmarks/gpu_smoke.py [--model tiny|smollm2|PATH] [--backend auto|trl|openrlhf]
                                   [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def smoke_recipe(gpus: int, backend: str, device: str = "cuda", model: str = "tiny",
                 steps: int = 2) -> Any:
    """The tiny recipe sized for ``gpus`` GPUs: the smallest ticket count (at least the
    tiny recipe's 3) whose samples split evenly over the GPUs, one sample per GPU at
    least (OpenRLHF's check) and the same count on each (DeepSpeed's)."""
    from spade.train.recipe import load_recipe

    base = load_recipe("tiny")
    group = base.grpo.group_size
    tickets = base.grpo.tickets_per_step
    used = gpus if backend == "openrlhf" else 1
    while (tickets * group) % used or tickets * group < used:
        tickets += 1
    return base.with_overrides(**{
        "steps": steps, "model.path": model, "model.device": device, "backend": backend,
        "model.dtype": "bfloat16" if device == "cuda" else "float32",
        "checkpoint.every": steps, "grpo.tickets_per_step": tickets,
        "cluster.gpus_per_node": used, "cluster.zero_stage": 2, "cluster.max_len": 4096,
        "cluster.max_tokens_per_gpu": 4096})


def _figures(run_dir: Path) -> dict[str, Any]:
    from spade.textfile import read_jsonl

    steps = read_jsonl(run_dir / "metrics.jsonl")
    out = []
    for m in steps:
        t = m["timing_s"]
        gen = float(t.get("generation_s") or 0.0)
        total = float(t.get("step_s") or t.get("rollout_s") or 0.0)
        tokens = m["tokens"]["designer"] + m["tokens"]["agent"]
        out.append({"step": m["step"], "step_s": round(total, 3),
                    "generation_share": round(gen / total, 3) if total else None,
                    "generated_tokens": tokens,
                    "tokens_per_s": round(tokens / gen, 1) if gen else None})
    mean = round(sum(s["step_s"] for s in out) / len(out), 3) if out else None
    return {"steps": out, "step_s_mean": mean}


def proved(run_dir: Path, recipe: Any) -> list[str]:
    """Statements the run directory supports (each checked here)."""
    from spade.train import _checkpoint as ckpt

    from spade.textfile import read_jsonl

    facts = []
    metrics = run_dir / "metrics.jsonl"
    lines = read_jsonl(metrics) if metrics.is_file() else []
    if len(lines) == recipe.steps:
        roles = {r for x in lines for r, n in x["tokens"].items() if n}
        facts.append(f"{recipe.steps} steps trained and recorded ({', '.join(sorted(roles))} "
                     f"samples) on the {recipe.backend} backend")
    steps = ckpt.checkpoint_steps(run_dir)
    if steps and steps[-1] == recipe.steps:
        last = ckpt.step_dir(run_dir, steps[-1])
        if (last / "config.json").is_file() and (last / "run_state.db").is_file():
            facts.append(f"checkpoint step-{steps[-1]} published with weights, config and "
                         "the run-store snapshot (evaluable as hf:RUN_DIR@latest)")
    if recipe.backend == "openrlhf":
        facts.append(f"OpenRLHF placed {recipe.cluster.gpus} actor(s) and "
                     f"{recipe.cluster.engines} vLLM engine(s) with a batch of "
                     f"{recipe.grpo.samples_per_step} samples")
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="tiny", help="tiny, smollm2 or a local model dir")
    parser.add_argument("--backend", choices=("auto", "trl", "openrlhf"), default="auto")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--out", type=Path, help="run directory (default: a temp dir)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print(json.dumps({"error": "torch is not installed"}))
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: this smoke test needs a GPU "
                                   "(--device cpu runs the trl backend on the CPU)"}))
        return 2
    from spade.train._run import run_training
    from spade.train.openrlhf._cli import installed_version

    from spade.errors import UserError

    gpus = torch.cuda.device_count() if args.device == "cuda" else 0
    version: str | None = None
    backend, why = args.backend, f"--backend {args.backend}"
    if args.backend == "auto" or args.backend == "openrlhf":
        try:
            version = installed_version()
            backend, why = "openrlhf", f"OpenRLHF {version} is installed"
        except UserError as exc:
            if args.backend == "openrlhf":
                print(json.dumps({"backend": "openrlhf", "error": str(exc)}))
                return 1
            backend, why = "trl", f"OpenRLHF is not installed ({exc}); trl instead"
    if backend == "openrlhf" and args.device == "cpu":
        print(json.dumps({"error": "the openrlhf backend needs GPUs"}))
        return 2
    recipe = smoke_recipe(max(gpus, 1), backend, args.device, args.model, args.steps)
    run_dir = args.out or Path(tempfile.mkdtemp(prefix="spade-gpu-smoke-"))
    began = time.perf_counter()
    try:
        run_training(recipe, run_dir, say=lambda m: print(m, file=sys.stderr))
    except UserError as exc:
        print(json.dumps({"backend": backend, "why": why, "error": str(exc)}))
        return 1
    result = {"backend": backend, "why": why, "openrlhf_version": version,
              "gpus": gpus, "device": torch.cuda.get_device_name(0) if gpus else "cpu",
              "dtype": recipe.model.dtype, "model": args.model,
              "samples_per_step": recipe.grpo.samples_per_step,
              "wall_s": round(time.perf_counter() - began, 1), "run_dir": str(run_dir),
              "proved": proved(run_dir, recipe), **_figures(run_dir)}
    print(json.dumps(result, indent=2))
    return 0 if len(result["proved"]) >= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
