"""`spade train`: GRPO self-play training of one model as designer and agent.

Without ``--recipe`` it trains the CPU demo recipe (SmolLM2-135M-Instruct, about 15
minutes on 2 cores). ``--dry-run`` validates the recipe and prints the resolved config,
the batch arithmetic and a memory estimate, then exits.

The run directory is the run's identity: rerunning the same command resumes from its
latest checkpoint (the default directory is derived from the recipe). ``--resume``
insists on continuing; ``--new-run`` moves an existing directory aside to ``DIR.prev-N``.
Checkpoints land in ``RUN_DIR/checkpoints/step-N`` (evaluate one with
``spade eval run --model hf:RUN_DIR@latest``); per-step metrics in ``RUN_DIR/metrics.jsonl``
and ``RUN_DIR/tensorboard``.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from spade.cli import _args
from spade.rundir import default_run_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--recipe", metavar="FILE",
                        help="training recipe (YAML, or a bundled name such as tiny); "
                             "default: the CPU demo recipe")
    parser.add_argument("--backend", choices=("trl", "openrlhf"),
                        help="trainer backend (default: the recipe's)")
    parser.add_argument("--steps", type=_args.steps, metavar="N",
                        help="total optimiser steps the run should have (overrides steps)")
    _args.add_run_dir(parser, "runs/train/<recipe>-<hash>")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate and print the resolved recipe, batch arithmetic and "
                             "memory estimate; do not train")
    parser.add_argument("--prepare", action="store_true",
                        help="openrlhf backend: write the run directory a Ray cluster job "
                             "needs and print its `ray job submit` command; do not train")
    _args.add_run_modes(parser)
    _args.add_set(parser, "the recipe", "grpo.group_size=4")


def _recipe(args: argparse.Namespace) -> Any:
    from spade.train.recipe import load_recipe

    options = {"steps": args.steps, "backend": args.backend}
    changes = {k: v for k, v in options.items() if v is not None} | dict(args.sets)
    recipe = load_recipe(args.recipe)
    return recipe.with_overrides(**changes) if changes else recipe


def run_dir_of(args: argparse.Namespace, recipe: Any) -> Path:
    if args.run_dir is not None:
        return Path(args.run_dir)
    return default_run_dir("train", recipe.name, {"fingerprint": recipe.fingerprint()})


def _dry_run(recipe: Any, run_dir: Path) -> int:
    from spade.train._models import estimate_memory

    report = {"recipe": recipe.model_dump(mode="json"), "batch": recipe.batch_plan(),
              "memory_estimate": estimate_memory(recipe.model, recipe.grpo.kl_coef).to_json()}
    if recipe.backend == "openrlhf":
        from spade.train.openrlhf import dry_run_report

        report["openrlhf"] = dry_run_report(recipe, run_dir)
    print(json.dumps(report, indent=2))
    return 0


def _prepare(recipe: Any, args: argparse.Namespace) -> int:
    from spade.errors import UserError

    if recipe.backend != "openrlhf":
        raise UserError("--prepare writes an OpenRLHF cluster job: add --backend openrlhf")
    from spade.train.openrlhf import prepare_job

    job = prepare_job(recipe, run_dir_of(args, recipe), resume=args.resume,
                      new_run=args.new_run)
    print(json.dumps(job, indent=2))
    print(shlex.join(job["ray_job_submit"]))
    return 0


def check(recipe: Any, run_dir: Path) -> None:
    """Every problem of ``recipe`` and ``run_dir`` in one line, before a model loads or the
    run directory is created."""
    from spade.cli._recipe_checks import recipe_problems
    from spade.errors import UserError

    problems = recipe_problems(recipe, run_dir)
    if problems:
        raise UserError("; ".join(problems))


def train(recipe: Any, run_dir: Path, *, resume: bool = False, new_run: bool = False) -> None:
    """Train ``recipe`` in ``run_dir`` (resuming it when it holds the run) with a progress
    line per step; prints where the metrics and checkpoints are."""
    from spade.train._checkpoint import checkpoint_steps
    from spade.train._progress import StepProgress
    from spade.train._run import run_training

    done = 0 if new_run else max(checkpoint_steps(run_dir), default=0)
    with StepProgress(recipe.steps, done=done) as progress:
        summary = run_training(recipe, run_dir, resume=resume, new_run=new_run,
                               say=progress.say, report=progress.step)
    best = run_dir / "checkpoints" / "best.txt"
    print(f"{summary.metrics_path} ({summary.steps_done} steps); checkpoints in "
          f"{run_dir / 'checkpoints'}" + (f", best {best.read_text().strip()}"
                                         if best.is_file() else ""))


def run(args: argparse.Namespace) -> int:
    recipe = _recipe(args)
    if args.dry_run:
        return _dry_run(recipe, run_dir_of(args, recipe))
    if args.prepare:
        return _prepare(recipe, args)
    run_dir = run_dir_of(args, recipe)
    check(recipe, run_dir)
    args.resolved_run_dir = run_dir
    train(recipe, run_dir, resume=args.resume, new_run=args.new_run)
    return 0


def resume_command(args: argparse.Namespace) -> str | None:
    return _args.run_dir_resume(args, "spade train")
