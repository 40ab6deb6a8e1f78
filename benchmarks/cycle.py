"""Self-play harness overhead, and the hf policy's batching efficiency.

Prints ONE JSON object. Reference workload: one cycle with the scripted zero-latency
policy designing 24 valid environments (the bundled examples), each played 16 times with
and 16 times without the hint, up to 25 turns, in the real bubblewrap sandbox with the real
validator and run store. Target: ``reference_workload_wall_s`` <= 10 s on a 2-core machine.
``hf_batching_efficiency`` comes from ``benchmarks/hf_batching.py`` (SmolLM2; target
>= 0.8); it is null with ``hf_batching_reason`` when that measurement cannot run.

    python benchmarks/cycle.py [--setting games|tool_use] [--skip-hf]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spade.config import load_config  # noqa: E402
from spade.cycle import Roles, run_selfplay, scripted_roles  # noqa: E402
from spade.designer import HintSource  # noqa: E402
from spade.textfile import read_jsonl  # noqa: E402


def reference_workload(setting: str) -> dict[str, Any]:
    config = load_config().with_overrides(**{
        "cycles": 1,
        "designer.setting": setting,
        "designer.prompts_per_cycle": 6,
        "designer.designs_per_prompt": 4,
        "agent.plays_per_arm": 16,
        "agent.max_turns": 25,
        "diversity.embedder": "lexical",
    })
    scripted = scripted_roles(setting, broken_rate=0.0)
    roles = Roles(scripted.designer, scripted.agent, None, HintSource.DESIGNER,
                  prepare_agent=scripted.scripted_agent.prepare)
    cpu0 = _cpu_s()
    with tempfile.TemporaryDirectory(prefix="spade-bench-") as tmp:
        began = time.perf_counter()
        summary = run_selfplay(config, Path(tmp) / "run", roles=roles,
                               progress=lambda _text: None)
        wall = time.perf_counter() - began
        cpu = _cpu_s() - cpu0
        metrics = read_jsonl(summary.metrics_path)[-1]
    timing = metrics["timing_s"]
    counts = metrics["counts"]
    accounted = ("designer_generation_s", "validation_s", "play_s", "diversity_s",
                 "bookkeeping_s", "store_write_s")
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "reference_workload_wall_s": round(wall, 3),
        "target_wall_s": 10.0,
        # CPU seconds of this process and its finished children (the sandbox workers);
        # with other load on the machine, wall time overstates the harness's own cost.
        "cpu_s": round(cpu, 3),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "environments": counts["valid"],
        "episodes": counts["episodes"],
        "env_steps": counts["env_steps"],
        "env_loads": counts["env_loads"],
        "split_s": {
            "validation_s": timing["validation_s"],
            "env_steps_s": timing["env_steps_s"],
            "env_load_s": timing["env_load_s"],
            "agent_generation_s": timing["agent_generation_s"],
            "designer_generation_s": timing["designer_generation_s"],
            "bookkeeping_s": round(timing["bookkeeping_s"] + timing["diversity_s"], 6),
            "store_write_s": timing["store_write_s"],
            "startup_and_export_s": round(wall - sum(timing[k] for k in accounted), 6),
        },
        "peak_rss_mb": round((self_kb + children_kb) / 1024, 1),
        "peak_rss_self_mb": round(self_kb / 1024, 1),
        "peak_rss_largest_child_mb": round(children_kb / 1024, 1),
        "solve_rate_hinted": metrics["solve_rate_hinted"],
        "solve_rate_unhinted": metrics["solve_rate_unhinted"],
    }


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def hf_batching() -> dict[str, Any]:
    path = ROOT / "benchmarks" / "hf_batching.py"
    if not path.is_file():
        return {"hf_batching_efficiency": None,
                "hf_batching_reason": "benchmarks/hf_batching.py is not present"}
    spec = importlib.util.spec_from_file_location("spade_bench_hf_batching", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        result = dict(module.measure_hf_batching())
    except Exception as exc:  # report why, never crash the other figures
        return {"hf_batching_efficiency": None,
                "hf_batching_reason": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    efficiency = result.get("hf_batching_efficiency", result.get("efficiency"))
    out: dict[str, Any] = {"hf_batching_efficiency": efficiency, "hf_batching": result}
    if efficiency is None:
        out["hf_batching_reason"] = result.get("reason", "the measurement gave no figure")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", choices=("games", "tool_use"), default="games")
    parser.add_argument("--skip-hf", action="store_true", help="leave out the SmolLM2 figure")
    args = parser.parse_args()
    result = reference_workload(args.setting)
    result["setting"] = args.setting
    if args.skip_hf:
        result.update({"hf_batching_efficiency": None, "hf_batching_reason": "--skip-hf"})
    else:
        result.update(hf_batching())
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
