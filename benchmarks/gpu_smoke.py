"""GPU smoke test of the trainer: 2 steps of the tiny recipe, figures as JSON.

On a GPU machine with OpenRLHF installed it runs the openrlhf backend (one node, every
local GPU, one vLLM engine per GPU); without OpenRLHF it runs the trl backend on the GPU
instead and says so (``"backend"`` and ``"why"``). Prints one JSON object: step time,
the share of it spent generating, tokens per second (trained tokens of the rollout over
its generation time). Meant to finish within 8 minutes; exits 2 without a GPU.

    python benchmarks/gpu_smoke.py [--model tiny|smollm2|PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _figures(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    steps = [json.loads(x) for x in lines]
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
    return {"steps": out, "step_s_mean": round(sum(s["step_s"] for s in out) / len(out), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="tiny, smollm2 or a local model dir")
    parser.add_argument("--out", type=Path, help="run directory (default: a temp dir)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print(json.dumps({"error": "torch is not installed"}))
        return 2
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: this smoke test needs a GPU"}))
        return 2
    from spade.errors import UserError
    from train._run import run_training
    from train.openrlhf._cli import installed_version
    from train.recipe import load_recipe

    gpus = torch.cuda.device_count()
    try:
        version: str | None = installed_version()
        backend, why = "openrlhf", f"OpenRLHF {version} is installed"
    except UserError as exc:
        version, backend, why = None, "trl", f"OpenRLHF is not installed ({exc}); trl instead"
    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 2, "model.path": args.model, "model.device": "cuda",
        "checkpoint.every": 2, "cluster.gpus_per_node": gpus if backend == "openrlhf" else 1,
        "cluster.zero_stage": 2, "cluster.max_len": 4096, "backend": backend})
    run_dir = args.out or Path(tempfile.mkdtemp(prefix="spade-gpu-smoke-"))
    began = time.perf_counter()
    try:
        run_training(recipe, run_dir, say=lambda m: print(m, file=sys.stderr))
    except UserError as exc:
        print(json.dumps({"backend": backend, "why": why, "error": str(exc)}))
        return 1
    result = {"backend": backend, "why": why, "openrlhf_version": version,
              "gpus": gpus, "device": torch.cuda.get_device_name(0), "model": args.model,
              "wall_s": round(time.perf_counter() - began, 1), "run_dir": str(run_dir),
              **_figures(run_dir)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
