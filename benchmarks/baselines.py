"""RLVE environment throughput: in-process vs through the sandbox, side by side in one run.

Prints ONE JSON object. A "step" is one whole single-turn episode of an RLVE environment:
``reset(seed)`` (problem generation and prompt) plus ``step(answer)`` (verification of the
reference answer), i.e. what one agent play costs the environment side. For every
environment the same seeds run in this process (the source executed directly) and in one
sandboxed worker (bubblewrap, seccomp, audit hooks), so the ratio is measured under the
same machine load (in alternating chunks, medians over the chunks); ``load_ms`` is the
sandboxed start of the environment (import + build). A round trip to the worker needs
the other process scheduled, so on an oversubscribed machine (``loadavg_1m`` far above the
core count) the sandboxed rate is set by scheduler wakeups, not by the sandbox.

    python benchmarks/baselines.py [--episodes N] [--rounds R] [--difficulty D] [--envs A,B]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spade.baselines import PAPER_ENVS, rlve_source
from spade.baselines._inprocess import in_process_env
from spade.sandbox import Sandbox


def _seconds(reset: Callable[..., Any], step: Callable[[str], Any],
             solution: Callable[[], Any], seeds: range) -> float:
    began = time.perf_counter()
    for seed in seeds:
        reset(seed=seed)
        answer = solution()
        step("0" if answer is None else str(answer[0]))
    return time.perf_counter() - began


def bench_env(box: Sandbox, env: str, difficulty: int, episodes: int,
              rounds: int) -> dict[str, Any]:
    """Alternate in-process and sandboxed chunks of the same seeds (load drift hits both)."""
    source = rlve_source(env, difficulty)
    local = in_process_env(source, f"rlve_{env}")
    began = time.perf_counter()
    with box.load(source, filename=f"rlve-{env}.py") as handle:
        load_ms = (time.perf_counter() - began) * 1000
        modes = {"inprocess": (local.reset, local.step, local.solution),
                 "sandbox": (handle.reset, handle.step, handle.solution)}
        for reset, _, _ in modes.values():
            reset(seed=0)  # warm
        rates: dict[str, list[float]] = {m: [] for m in modes}
        chunk = max(1, episodes // rounds)
        for r in range(rounds):
            seeds = range(1 + r * chunk, 1 + (r + 1) * chunk)
            for mode, calls in modes.items():
                rates[mode].append(chunk / _seconds(*calls, seeds))
    inproc, boxed = (statistics.median(rates[m]) for m in ("inprocess", "sandbox"))
    return {"env": env, "inprocess_steps_per_s": round(inproc, 1),
            "sandbox_steps_per_s": round(boxed, 1),
            "sandbox_over_inprocess": round(boxed / inproc, 3), "load_ms": round(load_ms, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--difficulty", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--envs", default=",".join(PAPER_ENVS))
    args = parser.parse_args()
    envs = [e for e in args.envs.split(",") if e]
    with Sandbox() as box:
        rows = [bench_env(box, env, args.difficulty, args.episodes, args.rounds) for env in envs]
    ratios = [r["sandbox_over_inprocess"] for r in rows]
    print(json.dumps({
        "benchmark": "baselines_rlve_env_throughput",
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "difficulty": args.difficulty,
        "episodes_per_env": args.episodes,
        "envs": rows,
        "inprocess_steps_per_s_median": statistics.median(r["inprocess_steps_per_s"]
                                                          for r in rows),
        "sandbox_steps_per_s_median": statistics.median(r["sandbox_steps_per_s"] for r in rows),
        "sandbox_over_inprocess_median": statistics.median(ratios),
        "sandbox_over_inprocess_min": min(ratios),
        "load_ms_median": statistics.median(r["load_ms"] for r in rows),
    }))


if __name__ == "__main__":
    main()
