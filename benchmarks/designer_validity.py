"""Designer validity of the real SmolLM2 designer, without and with the prefilled skeleton.

Prints ONE JSON object. Both arms run in the same process on the same machine, with the
same recipe, seeds, prompts (skills, corpus documents, few-shot seeds) and sampling: only
``designer.prefill`` differs (``none`` vs ``skeleton``). Each arm runs ``ceil(N / G)``
self-play cycles of one prompt and ``G`` designs (``G`` = the recipe's GRPO group size,
as in a training designer ticket) with the real bubblewrap sandbox, the real validator and
real plays of the valid designs by the same model. Each design lands in one stage:

- ``parse``: the reply gave no usable code/hint (reasons counted in ``parse_failures``);
- ``source``: the validator's static source check refused it;
- ``validation``: a later validator stage (load, types, ..., hint_leak) or a fault while
  playing it (``validation_stages`` names them);
- ``valid``: passed and played cleanly.

    python benchmarks/designer_validity.py [--designs 8] [--recipe cpu_demo] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spade.train import load_recipe  # noqa: E402

from spade.config import RunConfig  # noqa: E402
from spade.cycle import PARSE, PLAY_FAULT, VALID, CycleContext, Roles, fresh_state, run_cycle  # noqa: E402
from spade.designer import as_hint_source  # noqa: E402
from spade.diversity import LexicalEmbedder  # noqa: E402
from spade.policy import HFPolicy, prepare_smollm2  # noqa: E402
from spade.sandbox import Sandbox  # noqa: E402
from spade.validate import Stage  # noqa: E402

ARMS = ("none", "skeleton")


def _stage(outcome: str) -> str:
    if outcome == PARSE:
        return "parse"
    if outcome == VALID:
        return "valid"
    if outcome == str(Stage.SOURCE):
        return "source"
    return "validation"  # a later validator stage, or PLAY_FAULT


def run_arm(config: RunConfig, policy: HFPolicy, sandbox: Sandbox, designs: int,
            group: int) -> dict[str, Any]:
    """``designs`` designs (``group`` per cycle) with ``config``; counts by stage."""
    source = as_hint_source(config.designer.hint_source)
    roles = Roles(designer=policy, agent=policy,
                  hint_writer=policy if str(source) == "self" else None, hint_source=source)
    cycle_cfg = config.with_overrides(**{"designer.prompts_per_cycle": 1,
                                         "designer.designs_per_prompt": group})
    ctx = CycleContext(cycle_cfg, roles, sandbox, LexicalEmbedder())
    state = fresh_state(cycle_cfg)
    outcomes: list[str] = []
    reasons: Counter[str] = Counter()
    classes: list[str | None] = []
    refused: Counter[str] = Counter()
    finished: Counter[str] = Counter()
    began = time.perf_counter()
    for cycle in range(math.ceil(designs / group)):
        result = run_cycle(ctx, state, cycle)
        for d in result.designs[: designs - len(outcomes)]:
            outcomes.append(d.outcome)
            classes.append(d.parse.class_name)
            finished[d.generation.finish_reason] += 1
            if d.outcome == PARSE:
                reasons[d.parse.reason.split(":")[0]] += 1
            elif d.verdict is not None and not d.verdict.valid:
                refused[f"{d.outcome}: {d.verdict.reason.splitlines()[0][:80]}"] += 1
    stages = Counter(_stage(o) for o in outcomes)
    later = Counter(o for o in outcomes if _stage(o) == "validation")
    n = len(outcomes)
    return {
        "designs": n,
        "by_stage": {k: stages.get(k, 0) for k in ("parse", "source", "validation", "valid")},
        "validity_rate": round(stages.get("valid", 0) / n, 4) if n else 0.0,
        "parsed_rate": round(1 - stages.get("parse", 0) / n, 4) if n else 0.0,
        "parse_failures": dict(sorted(reasons.items())),
        "validation_stages": dict(sorted(later.items())),
        "validator_reasons": dict(sorted(refused.items())),
        "finish_reasons": dict(sorted(finished.items())),
        "play_faults": later.get(PLAY_FAULT, 0),
        "class_names": classes,
        "wall_s": round(time.perf_counter() - began, 1),
    }


def _code_version() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=8, help="designs per arm")
    ap.add_argument("--recipe", default="cpu_demo")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.designs < 1:
        print("--designs must be >= 1", file=sys.stderr)
        return 2
    import torch

    from spade.identity import model_identity

    code_version = _code_version()  # before the long run: the code that runs
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    recipe = load_recipe(args.recipe)
    base = recipe.selfplay.with_overrides(seed=args.seed)
    group = recipe.grpo.group_size
    model_dir = prepare_smollm2()
    policy = HFPolicy.from_path(model_dir, device="cpu", name="smollm2-135m-instruct")
    load_before = os.getloadavg()
    arms: dict[str, Any] = {}
    with Sandbox("bwrap") as sandbox:
        for arm in ARMS:
            print(f"prefill {arm}: {args.designs} designs", file=sys.stderr, flush=True)
            cfg = base.with_overrides(**{"designer.prefill": arm})
            arms[arm] = run_arm(cfg, policy, sandbox, args.designs, group)
            print(f"prefill {arm}: {arms[arm]['by_stage']} in {arms[arm]['wall_s']} s",
                  file=sys.stderr, flush=True)
    d = base.designer
    print(json.dumps({
        "benchmark": "designer_validity",
        "model": "smollm2-135m-instruct",
        "model_sha256": model_identity(model_dir).sha256,
        "recipe": recipe.name,
        "code_version": code_version,
        "seed": args.seed,
        "designs_per_arm": args.designs,
        "designs_per_prompt": group,
        "designer": {"hint_source": str(d.hint_source), "few_shot_examples": d.few_shot_examples,
                     "hint_max_new_tokens": d.hint_max_new_tokens,
                     "sampling": dataclasses.asdict(d.sampling) if dataclasses.is_dataclass(
                         d.sampling) else d.sampling.model_dump()},
        "arms": arms,
        "validity_gain": round(arms["skeleton"]["validity_rate"]
                               - arms["none"]["validity_rate"], 4),
        "load_avg_1m": {"before": round(load_before[0], 2),
                        "after": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
