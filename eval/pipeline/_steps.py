"""The pipeline's steps: train every method, score every checkpoint, write the tables.

Every step calls the functions behind the commands a user runs (``spade train``,
``spade eval run``, ``spade report``), so the pipeline resumes the way they do: a finished
training run or evaluation is recognised and skipped, an interrupted one continues.
Layout under ``runs_dir``: ``train/<method>/`` (a training run) and
``eval/protocol-<hash>/<method>/<base|step-N>/`` (one evaluation run per checkpoint and
evaluation protocol, see :func:`eval_root`), ``heldout/slice-<hash>/...`` (each held-out
slice on the base model and each final checkpoint, see ``spade.eval.pipeline._heldout``) and
``results/``: the tables, the plots and
a copy of every evaluation's records (``results.json``, ``run.json``; paths made portable,
see ``spade.eval.pipeline._records``), written all at once. ``--publish`` writes that last folder
to the experiment's ``results_dir`` instead (the committed copy).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from spade.eval.pipeline._experiment import Experiment, Method
from spade.eval.pipeline._records import copy_run, portable

from spade.cli._args import writable_error
from spade.cli._boundary import describe
from spade.errors import SpadeError, UserError
from spade.textfile import atomic_write_text, fresh_stage, swap_in

__all__ = ["CheckpointEval", "command_step", "eval_all", "evaluate_step", "scored_runs",
           "train_all", "write_tables"]

Say = Callable[[str], None]


@contextlib.contextmanager
def command_step(command: str) -> Iterator[None]:
    """One command's function run as a pipeline step: what it prints goes to stderr with
    its progress (the pipeline's stdout is its final table), and its failure stops the
    pipeline with that command's own error in one line."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except SpadeError as exc:
        raise _failed(command, str(exc)) from None
    except (OSError, ImportError, UnicodeDecodeError) as exc:
        line = describe(exc)
        if line is None:
            raise
        raise _failed(command, line) from None


def _failed(command: str, why: str) -> UserError:
    return UserError(f"`spade {command}` failed: {why}; rerun the pipeline to resume once it "
                     "is fixed")


def evaluate_step(spec: str, label: str, out: Path, options: dict[str, Any],
                  twins: Sequence[Path] = ()) -> None:
    """``spade eval run`` of one model into ``out`` with a protocol's ``options()`` (a
    finished evaluation is skipped, an interrupted one resumes). ``twins``: the protocol's
    other runs, whose samples a checkpoint with the same model identity takes over
    (:mod:`spade.eval._twin`)."""
    from spade.eval.cli import eval_config, evaluate

    with command_step("eval run"):
        problem = writable_error(out, directory=True)
        if problem:
            raise UserError(f"--out: {problem}")
        cfg = eval_config(spec, label=label, out=out, **options)
        evaluate(replace(cfg, twins=tuple(t for t in twins if t != out)))


def _train_dir(exp: Experiment, m: Method) -> Path:
    return Path(exp.runs_dir) / "train" / m.slug


def _recipe_file(exp: Experiment, m: Method) -> str:
    """The method's recipe, with the experiment's ``recipe_overrides`` merged over it (a
    small recipe file that ``extends:`` the original, written beside the runs)."""
    path = exp.recipe_path(m)
    if not exp.recipe_overrides:
        return path
    from spade.train.recipe import bundled_recipe

    parent = Path(path) if Path(path).is_file() else bundled_recipe(path)
    target = Path(exp.runs_dir) / "recipes" / f"{m.slug}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = {"extends": str(parent.resolve()), **exp.recipe_overrides}
    atomic_write_text(target, yaml.safe_dump(doc, sort_keys=True))
    return str(target)


def train_all(exp: Experiment, say: Say) -> None:
    """Train every method that has a recipe (each resumes or is skipped when done)."""
    from spade.train.recipe import load_recipe

    from spade.cli.train import check, train

    todo = [m for m in exp.methods if m.recipe is not None]
    for i, m in enumerate(todo, 1):
        say(f"[train {i}/{len(todo)}] {m.label}: recipe {m.recipe} -> {_train_dir(exp, m)}")
        with command_step("train"):
            recipe, run_dir = load_recipe(_recipe_file(exp, m)), _train_dir(exp, m)
            check(recipe, run_dir)
            train(recipe, run_dir)


@dataclass(frozen=True)
class CheckpointEval:
    """One checkpoint of one method and where its evaluation lives."""

    method: Method
    spec: str | None  # None: scored earlier, weights since pruned
    step: int  # 0 for a base model
    out: Path
    final: bool
    best: bool


def eval_root(exp: Experiment) -> Path:
    """Where the evaluations of the experiment's protocol live: one folder per protocol
    (suites, preset, slice, samples, budget, seed, user simulator), so editing the
    protocol starts new evaluations instead of clashing with the old ones, and the tables
    never mix two protocols. The batch size and the checkpoint choice are not part of it."""
    return Path(exp.runs_dir) / "eval" / f"protocol-{exp.eval.digest()}"


def _checkpoints(exp: Experiment, m: Method, which: str | None = None) -> list[CheckpointEval]:
    """The base model, or the checkpoints of a trained method that ``which`` chooses (the
    evaluation's choice by default): those published now plus those already scored whose
    weights retention has since deleted (``spec`` None)."""
    out_root = eval_root(exp) / m.slug
    if m.model is not None:
        return [CheckpointEval(m, exp.model_spec(m), 0, out_root / "base", True, True)]
    from spade.train._checkpoint import BEST, CHECKPOINTS, checkpoint_steps

    run_dir = _train_dir(exp, m)
    steps = checkpoint_steps(run_dir)
    marker = run_dir / CHECKPOINTS / BEST
    best = marker.read_text(encoding="utf-8").strip() if marker.is_file() else None
    final = steps[-1] if steps else None
    which = which or exp.eval.checkpoints
    chosen = {s for s in steps if which == "all" or s == final
              or (which == "final_and_best" and f"step-{s}" == best)}
    scored = {int(d.name.removeprefix("step-")) for d in out_root.glob("step-*")
              if (d / "results.json").is_file() and d.name.removeprefix("step-").isdigit()}
    return [CheckpointEval(m, f"hf:{run_dir}@step-{s}" if s in steps else None, s,
                   out_root / f"step-{s}", s == final, f"step-{s}" == best)
            for s in sorted(chosen | scored)]


def scored_runs(exp: Experiment, which: str | None = None) -> list[CheckpointEval]:
    return [c for m in exp.methods for c in _checkpoints(exp, m, which)]


def _heldout_candidates(exp: Experiment, runs: list[CheckpointEval]) -> list[CheckpointEval]:
    """The runs the held-out slices map onto: every kept checkpoint when one of them
    scores them all (each slice keeps its own choice), else the evaluation's own runs
    (whose finals they take)."""
    if any(h.checkpoints == "all" for h in exp.heldout):
        return scored_runs(exp, "all")
    return runs


def eval_all(exp: Experiment, say: Say) -> list[CheckpointEval]:
    """Score the base model and every checkpoint once (finished evaluations are skipped
    by ``spade eval run`` itself; an interrupted one resumes)."""
    runs = scored_runs(exp)
    for m in exp.methods:
        if m.recipe is not None and not any(r.method == m for r in runs):
            say(f"[eval] {m.label}: no checkpoint yet (train it first)")
    for i, r in enumerate(runs, 1):
        tags = ", ".join(t for t, on in (("final", r.final), ("best", r.best)) if on)
        say(f"[eval {i}/{len(runs)}] {r.method.label} {r.out.name}"
            + (f" ({tags})" if tags and r.step else "") + f": {r.spec}")
        if r.spec is not None:
            evaluate_step(r.spec, r.method.label, r.out, exp.eval.options(),
                          [x.out for x in runs[:i - 1]])
        _annotate(r)
    from spade.eval.pipeline._heldout import score_heldout

    score_heldout(exp, _heldout_candidates(exp, runs), say)
    return runs


def _annotate(r: CheckpointEval) -> None:
    """Record the method's kind and the checkpoint's place in its results.json."""
    path = r.out / "results.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise UserError(f"{path} is unreadable ({type(exc).__name__}); move {r.out} "
                        "aside and rerun the eval step to score that checkpoint again") \
            from None
    doc.update({"method_kind": r.method.kind, "checkpoint_step": r.step,
                "checkpoint_final": r.final, "checkpoint_best": r.best})
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True))


def _training(exp: Experiment) -> list[Any]:
    """Every trained method's summary, read before anything is written: a damaged
    ``metrics.jsonl`` stops the step with one line and leaves the last tables as they were."""
    from spade.eval.pipeline._training import read_summary

    found = []
    for m in exp.methods:
        if m.recipe is None:
            continue
        run_dir = _train_dir(exp, m)
        try:
            found.append(read_summary(m.label, m.kind, run_dir))
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise UserError(
                f"{run_dir / 'metrics.jsonl'} is damaged ({type(exc).__name__}: "
                f"{str(exc)[:120]}); `spade experiment train` rewrites it from the run store"
            ) from None
    return [s for s in found if s is not None]


def write_tables(exp: Experiment, runs: list[CheckpointEval], say: Say, *, publish: bool = False
                 ) -> Path:
    """Paper-style tables of every method's final checkpoint (md, LaTeX, CSV), a bar
    chart, the learning curves, the training section and a copy of every evaluation's
    records, into :meth:`Experiment.output_dir`. All of them or none: they are written
    into a staging folder that replaces the previous results only when complete
    (:func:`spade.textfile.swap_in`)."""
    from spade.eval.cli_report import write_report
    from spade.eval.pipeline._curve import plot_curves
    from spade.eval.pipeline._heldout import attach_heldout, heldout_runs
    from spade.eval.pipeline._training import plot_dynamics, render_training

    finals = [str(r.out) for r in runs if r.final]
    if not finals:
        raise UserError("nothing has been evaluated yet: run the eval step first")
    summaries = _training(exp)
    candidates = _heldout_candidates(exp, runs)
    attach_heldout(exp, summaries, candidates)
    target = exp.output_dir(publish)
    stage = fresh_stage(target)
    try:
        kinds = {m.label: m.kind for m in exp.methods}
        for fmt, name in (("md", "tables.md"), ("latex", "tables.tex"), ("csv", "tables.csv")):
            with command_step("report"):
                write_report(finals, fmt=fmt, out=stage / name, kinds=kinds,
                             plot=stage / "scores.png" if fmt == "md" else None)
        plot_curves(runs, stage / "learning_curve.png", summaries)
        plot_dynamics([(m.label, _train_dir(exp, m)) for m in exp.methods
                       if m.recipe is not None], stage / "training_dynamics.png")
        atomic_write_text(stage / "training.json", json.dumps(
            [s.to_json() for s in summaries], indent=2, sort_keys=True) + "\n")
        section = render_training(summaries)
        if section:
            tables = stage / "tables.md"
            atomic_write_text(tables, tables.read_text(encoding="utf-8").rstrip("\n")
                              + "\n\n" + section)
        for r in runs:
            copy_run(r.out, stage / "records" / r.method.slug / r.out.name, samples=False)
        for h in exp.heldout:
            for r in heldout_runs(exp, candidates, h):
                # with the per-item scores: the paired test can be recomputed from them
                copy_run(r.out, stage / "records" / r.method.slug
                         / f"heldout-{h.suite}-{r.out.name}")
        atomic_write_text(stage / "experiment.json", json.dumps(
            portable(exp.model_dump(mode="json")), indent=2, sort_keys=True))
        swap_in(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    say(f"tables in {target / 'tables.md'}; learning curve {target / 'learning_curve.png'}"
        + ("" if publish else " (not committed; --publish writes them to "
           f"{exp.results_dir})"))
    return target / "tables.md"
