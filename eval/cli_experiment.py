"""``spade experiment``: the whole pipeline of an experiment file.

Before anything runs, the whole experiment is checked (every method's model or recipe,
every suite and its data, the output folders, the disk space training needs); all
problems are listed together (exit 2). ``train`` trains every method that has a recipe
(resumable; finished runs are skipped), ``eval`` scores the base model and every new
checkpoint of every method (each once, resumable), and the experiment's held-out slices
(``heldout:``) on the base model and each final checkpoint, writes the tables (with each
slice's paired test final vs base in ``training.json``) and learning curves
into ``RUNS_DIR/results`` (not committed; ``--publish`` writes them to the experiment's
committed ``results_dir`` instead) and prints the table, ``all`` does both.
``gate CHECKPOINT`` evaluates a checkpoint on the gate's slice and runs ``spade regress``
against the stored reference (exit 0 pass, 1 worse, 2 unusable); ``gate-reference``
(re)creates that reference from the experiment's base model: it is evaluated under the
runs directory and its records (results, run identity, per-sample scores; no prompts) are
copied to the reference directory, ready to commit.
Without EXPERIMENT the bundled CPU experiment (``experiments/cpu.yaml``) runs.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from spade.cli import _args

if TYPE_CHECKING:
    from spade.eval.pipeline import Experiment


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.add_argument("action", choices=("train", "eval", "all", "gate", "gate-reference"),
                        help="what to run")
    parser.add_argument("target", nargs="?", metavar="EXPERIMENT|CHECKPOINT",
                        help="experiment file or bundled name (default: cpu); for gate: the "
                             "checkpoint to gate (a model spec such as hf:RUN_DIR@latest)")
    parser.add_argument("--experiment", metavar="FILE",
                        help="for gate / gate-reference: the experiment whose gate slice and "
                             "reference are used (default: cpu)")
    parser.add_argument("--publish", action="store_true",
                        help="eval / all: write the tables and records to the experiment's "
                             "results_dir (committed) instead of RUNS_DIR/results")
    _args.add_set(parser, "the experiment", "eval.limit=1 or recipe_overrides.steps=2")


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _gate_dir(exp: Experiment) -> Path:
    """Where the gate's runs live: one folder per slice, so changing the slice starts new
    runs instead of clashing with (or resuming) runs of another slice."""
    return Path(exp.runs_dir) / "gate" / f"slice-{exp.gate.digest()}"


def _gate_reference(exp: Experiment) -> int:
    from spade.eval.pipeline._records import copy_run
    from spade.eval.pipeline._steps import evaluate_step

    from spade.errors import UserError

    base = [m for m in exp.methods if m.kind == "base"]
    if not base:
        raise UserError("the experiment has no base method to make the gate reference")
    g, work = exp.gate, _gate_dir(exp) / "reference"
    _say(f"[gate] reference: {base[0].model} on {','.join(g.suites)} -> {work}")
    evaluate_step(exp.model_spec(base[0]), base[0].label, work, g.options())
    copy_run(work, Path(g.reference_dir))
    _say(f"[gate] reference records (scores, no prompts) -> {g.reference_dir}")
    return 0


def _gate(exp: Experiment, spec: str) -> int:
    from spade.eval.cli_regress import regress
    from spade.eval.pipeline._steps import evaluate_step

    from spade.errors import UserError

    g, ref = exp.gate, Path(exp.gate.reference_dir)
    if not (ref / "results.json").is_file():
        raise UserError(f"no gate reference in {ref}: create it with "
                        "`spade experiment gate-reference`")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")[:80]
    out = _gate_dir(exp) / slug
    _say(f"[gate] candidate {spec} on {','.join(g.suites)} -> {out}")
    evaluate_step(spec, "candidate", out, g.options())
    return regress(ref, out)


def _check(exp: Experiment, args: argparse.Namespace, origin: str) -> None:
    """Every problem of the experiment for this action, before any compute (exit 2)."""
    from spade.eval.pipeline._preflight import check_experiment

    _say(f"checking experiment {exp.name} ({args.action})")
    output = exp.output_dir(args.publish) if args.action in ("eval", "all") else None
    candidate = args.target if args.action == "gate" else None
    checked = check_experiment(exp, args.action, origin, output=output, candidate=candidate)
    disk = ""
    if checked.disk_free_gb is not None and args.action in ("train", "all"):
        disk = (f"; training writes about {checked.disk_needed_gb:.1f} GB of checkpoints, "
                f"{checked.disk_free_gb:.0f} GB free")
    _say(f"checked: {len(exp.methods)} methods, suites and their data, output folders{disk}")


def run(args: argparse.Namespace) -> int:
    from spade.eval.pipeline import eval_all, load_experiment, train_all, write_tables

    from spade.errors import UserError

    if args.publish and args.action not in ("eval", "all"):
        raise UserError("--publish applies to eval and all")
    if args.action in ("gate", "gate-reference"):
        if args.action == "gate" and not args.target:
            raise UserError("gate needs the checkpoint to gate, e.g. hf:RUN_DIR@latest")
        exp = load_experiment(args.experiment, dict(args.sets))
        _check(exp, args, args.experiment or "experiment cpu")
        if args.action == "gate-reference":
            return _gate_reference(exp)
        return _gate(exp, args.target)
    exp = load_experiment(args.target, dict(args.sets))
    _check(exp, args, args.target or "experiment cpu")
    _say(f"experiment {exp.name}: {len(exp.methods)} methods "
         f"({', '.join(m.label for m in exp.methods)})")
    if args.action in ("train", "all"):
        train_all(exp, _say)
    if args.action in ("eval", "all"):
        runs = eval_all(exp, _say)
        tables = write_tables(exp, runs, _say, publish=args.publish)
        sys.stdout.write(tables.read_text(encoding="utf-8"))
    return 0
