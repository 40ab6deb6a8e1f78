"""Single-GPU check: what the first real run needs, on one GPU, in under 9 minutes.

Meant for a machine with one GPU, torch and transformers installed, no network, and this
checkout with a few pure-Python wheels beside it (``pip install --no-deps`` of pytest,
trl, accelerate, datasets and openrlhf; see docs/cluster.md). Parts, each timed and
reported as JSON (a part that cannot run says why; the others still run):

- ``env``: Python, kernel, GPU, user-namespace settings, container hints, packages;
- ``sandbox``: the sandbox's round-trip tests (every bundled environment through the
  real bwrap sandbox) on this kernel;
- ``smoke``: ``benchmarks/gpu_smoke.py`` on the trl backend (bf16 on a GPU, 2 steps, a
  checkpoint published);
- ``openrlhf``: OpenRLHF's own code on the device with only Ray, vLLM and DeepSpeed stood
  in: its agent loader loads SPADE's executor from a prepared run, which plays real
  tickets on the live model (the engine's ``generate`` runs the model), then its
  experience conversion, advantages, ``Actor`` log-probs and ``PolicyLoss`` take one
  training step;
- ``memory``: peak memory of OpenRLHF's ``Actor.forward`` log-prob pass and of one
  training step (bf16, gradient checkpointing, fp32 logits as OpenRLHF makes them) on
  random weights of the Qwen3-4B and Qwen3-8B shapes, for micro-batch 1/2/4 x 8k/16k/32k
  tokens, under a cap of ``--memory-gib`` (80 by default; the allocator is limited to it
  on a larger GPU), next to ``spade.train.openrlhf._memory``'s estimate; prints the largest
  setting that fits.

``--device cpu`` runs every part at tiny shapes (the memory part then reports
allocations counted by a tensor-tracking mode instead of CUDA's peak).

    python benchmarks/gpu_check.py [--device cuda|cpu] [--parts env,sandbox,...] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

PARTS = ("env", "sandbox", "smoke", "openrlhf", "memory")
PACKAGES = ("torch", "transformers", "trl", "accelerate", "datasets", "openrlhf", "vllm",
            "deepspeed", "flash-attn", "ray", "pytest", "spade-rl")
#: Qwen3 shapes (vocabulary, hidden, layers, MLP, heads, KV heads, head dim, tied).
SHAPES = {"qwen3-4b": (151936, 2560, 36, 9728, 32, 8, 128, True),
          "qwen3-8b": (151936, 4096, 36, 12288, 32, 8, 128, False),
          "tiny": (512, 64, 2, 128, 4, 2, 16, False)}


def _run(cmd: list[str], timeout: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    return done.returncode, done.stdout + done.stderr


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


# -- parts ---------------------------------------------------------------------------
def part_env(args: argparse.Namespace) -> dict[str, Any]:
    import importlib.metadata as md

    import torch

    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    gpu = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        gpu = {"name": p.name, "memory_gib": round(p.total_memory / 1024 ** 3, 1),
               "count": torch.cuda.device_count(), "cuda": torch.version.cuda,
               "bf16": torch.cuda.is_bf16_supported()}
    bwrap = shutil.which("bwrap")
    bwrap_version = _run([bwrap, "--version"], 10)[1].strip() if bwrap else None
    return {"ok": True, "python": sys.version.split()[0], "kernel": platform.release(),
            "machine": platform.machine(), "cpus": os.cpu_count(), "gpu": gpu,
            "container": Path("/.dockerenv").exists() or Path("/run/.containerenv").exists(),
            "userns": {"unprivileged_userns_clone":
                       _read("/proc/sys/kernel/unprivileged_userns_clone"),
                       "max_user_namespaces": _read("/proc/sys/user/max_user_namespaces"),
                       "apparmor_restrict_unprivileged_userns":
                       _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")},
            "bwrap": bwrap_version, "packages": versions,
            "disk_free_gb": round(shutil.disk_usage(ROOT).free / 1e9, 1)}


def part_sandbox(args: argparse.Namespace) -> dict[str, Any]:
    if importlib.util.find_spec("pytest") is None:
        return {"ok": False, "error": "pytest is not installed (carry its wheel)"}
    from spade.train.openrlhf._preflight import sandbox_problem
    from spade.train.recipe import load_recipe

    problem = sandbox_problem(load_recipe("tiny"))
    if problem is not None:
        return {"ok": False, "error": problem}
    files = ["tests/sandbox/test_roundtrip.py"]
    if args.device == "cuda":
        files.append("tests/sandbox/test_isolation.py")
    rc, out = _run([sys.executable, "-m", "pytest", *files, "-q", "-m", "not slow",
                    "-p", "no:cacheprovider"], 240)
    tail = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return {"ok": rc == 0, "tests": files, "summary": tail[0]}


def part_smoke(args: argparse.Namespace) -> dict[str, Any]:
    out_dir = Path(tempfile.mkdtemp(prefix="spade-gpu-check-smoke-"))
    rc, out = _run([sys.executable, str(ROOT / "benchmarks" / "gpu_smoke.py"), "--backend",
                    "trl", "--device", args.device, "--out", str(out_dir / "run")], 300)
    start = out.find("{\n")
    try:
        result = json.loads(out[start:out.rindex("}") + 1]) if start >= 0 else {}
    except json.JSONDecodeError:
        result = {}
    if rc != 0 or not result:
        return {"ok": False, "error": out.strip().splitlines()[-1:] or ["no output"]}
    keep = ("backend", "device", "dtype", "samples_per_step", "wall_s", "step_s_mean",
            "proved")
    return {"ok": len(result.get("proved", [])) >= 2, **{k: result.get(k) for k in keep}}


def part_openrlhf(args: argparse.Namespace) -> dict[str, Any]:
    from spade.installed import is_installed

    if not is_installed("openrlhf"):
        return {"ok": False, "error": "openrlhf is not installed (pip install --no-deps "
                                      "openrlhf==0.11.2)"}
    from _gpu_openrlhf import run_openrlhf_check

    return run_openrlhf_check(args.device)


def part_memory(args: argparse.Namespace) -> dict[str, Any]:
    from spade.installed import is_installed

    if not is_installed("openrlhf"):
        return {"ok": False, "error": "openrlhf is not installed"}
    from _gpu_openrlhf import run_memory_grid

    shapes = ["qwen3-4b", "qwen3-8b"] if args.device == "cuda" else ["tiny"]
    lengths = [8192, 16384, 32768] if args.device == "cuda" else [64, 128, 256]
    return run_memory_grid(args.device, shapes, [1, 2, 4], lengths, args.memory_gib,
                           deadline=time.monotonic() + args.memory_budget_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--memory-gib", type=float, default=80.0)
    parser.add_argument("--memory-budget-s", type=float, default=200.0)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(json.dumps({"error": f"unknown parts {unknown} (known: {list(PARTS)})"}))
        return 2
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device (--device cpu runs at tiny shapes)"}))
        return 2
    began = time.monotonic()
    report: dict[str, Any] = {"started": datetime.datetime.now(datetime.UTC).isoformat(),
                              "device": args.device, "parts": {}}
    for name in parts:
        t0 = time.monotonic()
        try:  # what the libraries print goes to stderr: stdout is the JSON report
            with contextlib.redirect_stdout(sys.stderr):
                result = globals()[f"part_{name}"](args)
        except Exception as exc:  # one part failing must not hide the others' results
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        result["seconds"] = round(time.monotonic() - t0, 1)
        report["parts"][name] = result
        print(json.dumps({name: result}), file=sys.stderr)
    report["seconds"] = round(time.monotonic() - began, 1)
    report["ok"] = all(r.get("ok") for r in report["parts"].values())
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
