"""`spade selfplay`: run self-play cycles without training.

Everything but the run's location and length lives in the config file; ``--policy``
overrides ``policy.spec``. With a frozen designer this also produces the static
environment pool of the fixed-environment baseline (``RUN_DIR/envs``).

The run directory is the run's identity: rerunning the same command continues the run
from its last completed cycle (the default directory is derived from the config, so this
holds without ``--run-dir`` too). ``--resume`` insists on continuing; ``--new-run`` moves
an existing directory aside to ``DIR.prev-N`` and starts over. A directory holding a run
of another config is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spade.cli import _args
from spade.config import RunConfig, load_config
from spade.modelspec import POLICY_SPECS
from spade.rundir import default_run_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="run config (YAML); default: the games setting")
    parser.add_argument("--policy", metavar="SPEC",
                        help=f"{' | '.join(POLICY_SPECS)} (overrides policy.spec; PATH is a local "
                             "model directory, model hubs are not used)")
    parser.add_argument("--cycles", type=_args.steps, metavar="N",
                        help="total cycles the run should have (overrides cycles)")
    _args.add_run_dir(parser, "runs/selfplay/<config>-<hash of the config>")
    _args.add_run_modes(parser)
    _args.add_set(parser, "the run config", "agent.plays_per_arm=4")


def _config(args: argparse.Namespace) -> RunConfig:
    config = load_config(args.config)
    options = {"policy.spec": args.policy or None, "cycles": args.cycles}
    changes = {k: v for k, v in options.items() if v is not None} | dict(args.sets)
    return config.with_overrides(**changes) if changes else config


def run_dir_of(args: argparse.Namespace, config: RunConfig) -> Path:
    """``--run-dir``, else the directory derived from the config (without the cycle count)."""
    if args.run_dir is not None:
        return Path(args.run_dir)
    name = Path(args.config).stem if args.config else config.designer.setting
    return default_run_dir("selfplay", name, {"fingerprint": config.fingerprint()})


def run(args: argparse.Namespace) -> int:
    from spade.cli._recipe_checks import corpus_problem
    from spade.cycle import run_selfplay
    from spade.modelspec import check_local

    config = _config(args)
    for spec in (config.policy.spec, config.policy.frozen_designer, config.policy.hint_writer):
        if spec:
            check_local(spec)
    if config.designer.use_corpus:  # every line, before a model loads or a run starts
        corpus_problem(config.corpus.path or config.designer.setting)
    args.resolved_run_dir = run_dir = run_dir_of(args, config)
    summary = run_selfplay(config, run_dir, resume=True if args.resume else None,
                           new_run=args.new_run)
    done = 0 if summary.last_cycle is None else summary.last_cycle + 1
    print(f"{summary.metrics_path} ({done} cycles); environments in {summary.pool_index.parent}")
    return 0


def resume_command(args: argparse.Namespace) -> str | None:
    return _args.run_dir_resume(args, "spade selfplay")
