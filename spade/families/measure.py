"""Measure how often a real agent solves each family's modules, with and without the hint.

    python -m spade.families.measure --plays 4 [--policy smollm2] [--out FILE]

Every module of every family is played ``--plays`` times per arm (unhinted and hinted, on
the same seeds), one batched generation per turn step, through the same episode runner and
sandbox as training. Prints one JSON object (per family and per module: solve rates and
their play counts) and writes it to ``--out`` (default: the library's own
``solve_rates.json``, which the warm-start prompts quote as memory solve rates).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.families._registry import PACKAGE, FamilyInstance, all_instances, families_version
from spade.seeds import derive_seed
from spade.textfile import atomic_write_text

RATES_FILE = "solve_rates.json"
_NAMESPACE = "families-measure"


def bundled_rates() -> dict[str, float]:
    """family -> measured unhinted solve rate, from the library's ``solve_rates.json``
    (empty when it was never measured)."""
    return {name: unhinted for name, (_, unhinted) in bundled_rate_pairs().items()}


def bundled_rate_pairs() -> dict[str, tuple[float, float]]:
    """family -> (hinted, unhinted) measured solve rates, from ``solve_rates.json``."""
    path = resources.files(PACKAGE).joinpath(RATES_FILE)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text("utf-8"))
    return {name: (float(f["hinted"]), float(f["unhinted"]))
            for name, f in data["families"].items()}


def _rate(wins: list[bool]) -> float:
    return round(sum(wins) / len(wins), 4) if wins else 0.0


def measure(policy: Any, instances: list[FamilyInstance], plays: int, *, seed: int,
            temperature: float, max_new_tokens: int, isolation: str = "bwrap",
            say: Any = None) -> dict[str, Any]:
    """Solve rates of ``instances`` under ``policy`` (a token-level policy)."""
    from spade.cycle._pool import HandlePool
    from spade.episodes import EpisodeConfig, EpisodeJob, run_episodes
    from spade.policy import SamplingParams
    from spade.sandbox import Sandbox

    jobs = [EpisodeJob(inst.name, derive_seed(seed, _NAMESPACE, inst.name, i, bits=31), hint)
            for inst in instances for i in range(plays) for hint in (None, inst.hint)]
    params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens,
                            seed=derive_seed(seed, _NAMESPACE, "agent"))
    began = time.perf_counter()
    with Sandbox(isolation) as sandbox, \
            HandlePool(sandbox, {i.name: i.source for i in instances}) as pool:
        if say is not None:
            say(f"playing {len(jobs)} episodes on {len(instances)} modules")
        trajectories = run_episodes(policy, jobs, pool, params,
                                    EpisodeConfig(max_turns=2, max_active=64))
    by_module: dict[str, dict[str, list[bool]]] = {}
    for job, tr in zip(jobs, trajectories, strict=True):
        arm = "unhinted" if job.hint is None else "hinted"
        by_module.setdefault(job.env_id, {"unhinted": [], "hinted": []})[arm].append(
            tr.total_return >= 1.0 and not tr.env_fault)
    families: dict[str, dict[str, Any]] = {}
    modules: dict[str, dict[str, Any]] = {}
    for inst in instances:
        arms = by_module[inst.name]
        modules[inst.name] = {"params": inst.params, "plays": plays,
                              **{a: _rate(w) for a, w in arms.items()}}
        fam = families.setdefault(inst.family, {"skill": inst.skill, "unhinted": [],
                                                "hinted": []})
        for arm, wins in arms.items():
            fam[arm] += wins
    summary = {
        name: {"skill": f["skill"], "plays_per_arm": len(f["unhinted"]),
               "unhinted": _rate(f["unhinted"]), "hinted": _rate(f["hinted"]),
               "module_range": [min(modules[i.name]["unhinted"] for i in instances
                                    if i.family == name),
                                max(modules[i.name]["unhinted"] for i in instances
                                    if i.family == name)]}
        for name, f in families.items()}
    return {"version": families_version(), "seed": seed, "plays_per_arm": plays,
            "sampling": {"temperature": temperature, "max_new_tokens": max_new_tokens},
            "seconds": round(time.perf_counter() - began, 1),
            "families": summary, "modules": modules}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spade.families.measure",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--plays", type=int, default=4, help="plays per module and arm")
    parser.add_argument("--policy", default="smollm2", help="agent policy spec")
    parser.add_argument("--families", default="", help="comma-separated names (default all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--isolation", default="bwrap")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.plays < 1:
            raise UserError("--plays must be at least 1")
        from spade.policy import make_policy

        names = tuple(n for n in args.families.split(",") if n)
        instances = all_instances(names)
        policy = make_policy(args.policy, device="cpu")
        result = {"policy": args.policy, **measure(
            policy, instances, args.plays, seed=args.seed, temperature=args.temperature,
            max_new_tokens=args.max_new_tokens, isolation=args.isolation,
            say=lambda s: print(s, file=sys.stderr, flush=True))}
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    out = args.out or Path(str(resources.files(PACKAGE).joinpath(RATES_FILE)))
    atomic_write_text(out, text)
    print(json.dumps(result["families"], indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
