"""`spade selfplay`: run self-play cycles without training.

Everything but the run's location and length lives in the config file; ``--policy``
overrides ``policy.spec``. With a frozen designer this also produces the static
environment pool of the fixed-environment baseline (``RUN_DIR/envs``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spade.config import load_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="run config (YAML); default: the games setting")
    parser.add_argument("--policy", metavar="SPEC",
                        help="scripted | smollm2 | hf:PATH | vllm:PATH (overrides policy.spec)")
    parser.add_argument("--cycles", type=int, metavar="N",
                        help="total cycles the run should have (overrides cycles)")
    parser.add_argument("--run-dir", metavar="DIR", default="runs/selfplay",
                        help="run directory (default: runs/selfplay)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --run-dir from its last completed cycle")


def run(args: argparse.Namespace) -> int:
    from spade.cycle import run_selfplay
    from spade.errors import UserError

    config = load_config(args.config)
    overrides: dict[str, object] = {}
    if args.policy:
        overrides["policy.spec"] = args.policy
    if args.cycles is not None:
        if args.cycles < 1:
            raise UserError(f"--cycles must be >= 1, got {args.cycles}")
        overrides["cycles"] = args.cycles
    if overrides:
        config = config.with_overrides(**overrides)
    summary = run_selfplay(config, Path(args.run_dir), resume=args.resume)
    done = 0 if summary.last_cycle is None else summary.last_cycle + 1
    print(f"{summary.metrics_path} ({done} cycles); environments in {summary.pool_index.parent}")
    return 0
