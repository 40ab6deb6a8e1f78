"""The held-out slices: the base model and every trained method's final checkpoint scored
item by item on slices no training step drew from, and a paired test of final vs base.

Each slice (``heldout:`` of the experiment, one or a list of
:class:`spade.eval.pipeline.HeldoutSlice`) is an evaluation like the others, through
``spade eval run``, so it resumes and is recorded the same way; it lives beside them under
``RUNS_DIR/heldout/slice-<hash>/<method>/<base|step-N>/`` (the hash of the slice's own
settings: a changed slice starts new runs, and adding a slice leaves the others' runs as
they are). Per item, scores are averaged over its samples; base and final are paired by
item id and must cover the same items. Each trained method's ``training.json`` entry gets
``heldout_slices``, one record per slice: {suite, items, base, final, p_value, base_label,
final_step, curve}, p being the one-sided paired sign-flip test of final > base
(:func:`spade.eval.pipeline._training.paired_p_value`); ``heldout`` is the first slice's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.eval.pipeline._experiment import Experiment, HeldoutSlice

from spade.errors import UserError

if TYPE_CHECKING:
    from spade.eval.pipeline._steps import CheckpointEval
    from spade.eval.pipeline._training import TrainingSummary

__all__ = ["attach_heldout", "heldout_root", "heldout_runs", "item_scores", "score_heldout"]


def heldout_root(exp: Experiment, held: HeldoutSlice) -> Path:
    return Path(exp.runs_dir) / "heldout" / f"slice-{held.digest()}"


def heldout_runs(exp: Experiment, runs: Sequence[CheckpointEval], held: HeldoutSlice
                 ) -> list[CheckpointEval]:
    """The base model and each trained method's final checkpoint (every checkpoint of
    ``runs`` with ``checkpoints: all``), as runs of the slice ``held``."""
    root = heldout_root(exp, held)
    every = held.checkpoints == "all"
    return [replace(r, out=root / r.method.slug / r.out.name) for r in runs
            if r.final or every]


def score_heldout(exp: Experiment, runs: Sequence[CheckpointEval], say: Callable[[str], None]
                  ) -> None:
    """Score every slice on each of its :func:`heldout_runs` (finished ones are skipped by
    ``spade eval run`` itself; an interrupted one resumes)."""
    from spade.eval.pipeline._steps import evaluate_step

    todo = [(h, r) for h in exp.heldout for r in heldout_runs(exp, runs, h)]
    for i, (h, r) in enumerate(todo, 1):
        say(f"[heldout {i}/{len(todo)}] {r.method.label} {r.out.name}: {h.suite}, {r.spec}")
        if r.spec is not None:
            earlier = [x.out for g, x in todo[:i - 1] if g == h]
            evaluate_step(r.spec, r.method.label, r.out, h.options(), earlier)


def item_scores(out: Path, suite: str) -> dict[str, float]:
    """item id -> mean score over its samples, from a finished evaluation in ``out``."""
    from spade.eval.store import EvalStore

    try:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        results = {}
    if not results.get("finished"):
        raise UserError(f"the held-out slice has no finished evaluation in {out}: run the "
                        "eval step (it resumes)")
    per: dict[str, list[float]] = {}
    for (key, _), rec in EvalStore(out).load_samples(suite).items():
        per.setdefault(key, []).append(float(rec["score"]))
    if not per:
        raise UserError(f"{out}: no {suite} samples to pair")
    return {k: sum(v) / len(v) for k, v in per.items()}


def attach_heldout(exp: Experiment, summaries: Sequence[TrainingSummary],
                   runs: Sequence[CheckpointEval]) -> None:
    """Fill each trained method's ``heldout_slices`` (and ``heldout``, the first) from the
    slices' runs over ``runs`` (one-line errors when a run is missing or the two runs
    scored different items)."""
    if not exp.heldout or not summaries:
        return
    for s in summaries:
        s.heldout_slices = []
    for h in exp.heldout:
        held = heldout_runs(exp, runs, h)
        # each run's samples read once per slice: the base pairs with every method, and a
        # final checkpoint is both the test's and the curve's last point
        scores = functools.cache(functools.partial(item_scores, suite=h.suite))
        for s in summaries:
            s.heldout_slices.append(_record(h.suite, s.label, held, scores))
    for s in summaries:
        s.heldout = s.heldout_slices[0]


def _record(suite: str, label: str, held: Sequence[CheckpointEval],
            scores: Callable[[Path], dict[str, float]]) -> dict[str, Any]:
    """One method's record on one slice: base vs its final checkpoint, and the curve."""
    from spade.eval.pipeline._training import heldout

    base = next((r for r in held if r.method.kind == "base"), None)
    if base is None:
        raise UserError("heldout: no base model run of the held-out slice")
    before = scores(base.out)
    final = next((r for r in held if r.method.label == label and r.step and r.final), None)
    if final is None:
        raise UserError(f"heldout: {label} has no final checkpoint scored on {suite}")
    after = scores(final.out)
    if set(after) != set(before):
        raise UserError(f"heldout: {label}'s final checkpoint and {base.method.label} "
                        f"scored different {suite} items ({len(after)} vs {len(before)})")
    keys = sorted(before)
    return {**heldout(suite, [before[k] for k in keys], [after[k] for k in keys]),
            "base_label": base.method.label, "final_step": final.step,
            "curve": _curve(before, [r for r in held if r.method.label == label and r.step],
                            scores)}


def _curve(base: dict[str, float], runs: Sequence[CheckpointEval],
           scores: Callable[[Path], dict[str, float]]) -> list[dict[str, float]]:
    """Mean slice score by training step: the base model at step 0, then each checkpoint
    scored on the same items (one that was not finished is left out)."""
    points = [{"step": 0, "score": sum(base.values()) / len(base)}]
    for r in sorted(runs, key=lambda r: r.step):
        try:
            got = scores(r.out)
        except UserError:
            if r.final:
                raise
            continue
        if set(got) == set(base):
            points.append({"step": r.step, "score": sum(got.values()) / len(got)})
    return points
