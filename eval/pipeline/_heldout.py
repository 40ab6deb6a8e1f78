"""The held-out slice: the base model and every trained method's final checkpoint scored
item by item on a slice no training step drew from, and a paired test of final vs base.

The slice (``heldout:`` of the experiment, :class:`spade.eval.pipeline.HeldoutSlice`) is an
evaluation like the others, through ``spade eval run``, so it resumes and is recorded the
same way; it lives beside them under ``RUNS_DIR/heldout/slice-<hash>/<method>/<base|step-N>/``
(the hash of the slice's settings: a changed slice starts new runs). Per item, scores are
averaged over its samples; base and final are paired by item id and must cover the same
items. Each trained method's ``training.json`` entry gets ``heldout``: {suite, items, base,
final, p_value, base_label, final_step}, p being the one-sided paired sign-flip test of
final > base (:func:`spade.eval.pipeline._training.paired_p_value`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from spade.eval.pipeline._experiment import Experiment

from spade.errors import UserError

if TYPE_CHECKING:
    from spade.eval.pipeline._steps import CheckpointEval
    from spade.eval.pipeline._training import TrainingSummary

__all__ = ["attach_heldout", "heldout_root", "heldout_runs", "item_scores", "score_heldout"]


def heldout_root(exp: Experiment) -> Path:
    assert exp.heldout is not None
    return Path(exp.runs_dir) / "heldout" / f"slice-{exp.heldout.digest()}"


def heldout_runs(exp: Experiment, runs: Sequence[CheckpointEval]) -> list[CheckpointEval]:
    """The base model and each trained method's final checkpoint (every checkpoint of
    ``runs`` with ``checkpoints: all``), as runs of the slice."""
    if exp.heldout is None:
        return []
    root = heldout_root(exp)
    every = exp.heldout.checkpoints == "all"
    return [replace(r, out=root / r.method.slug / r.out.name) for r in runs
            if r.final or every]


def score_heldout(exp: Experiment, runs: Sequence[CheckpointEval], say: Callable[[str], None]
                  ) -> list[CheckpointEval]:
    """Score the slice on every run of :func:`heldout_runs` (finished ones are skipped by
    ``spade eval run`` itself; an interrupted one resumes)."""
    from spade.eval.pipeline._steps import evaluate_step

    todo = heldout_runs(exp, runs)
    assert exp.heldout is not None or not todo
    for i, r in enumerate(todo, 1):
        assert exp.heldout is not None
        say(f"[heldout {i}/{len(todo)}] {r.method.label} {r.out.name}: "
            f"{exp.heldout.suite}, {r.spec}")
        if r.spec is not None:
            evaluate_step(r.spec, r.method.label, r.out, exp.heldout.options())
    return todo


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
                   held: Sequence[CheckpointEval]) -> None:
    """Fill each trained method's ``heldout`` from the slice's runs (one-line errors when a
    run is missing or the two runs scored different items)."""
    from spade.eval.pipeline._training import heldout

    if exp.heldout is None or not summaries:
        return
    suite = exp.heldout.suite
    base = next((r for r in held if r.method.kind == "base"), None)
    if base is None:
        raise UserError("heldout: no base model run of the held-out slice")
    before = item_scores(base.out, suite)
    for s in summaries:
        final = next((r for r in held if r.method.label == s.label and r.step and r.final),
                     None)
        if final is None:
            raise UserError(f"heldout: {s.label} has no final checkpoint scored on {suite}")
        after = item_scores(final.out, suite)
        if set(after) != set(before):
            raise UserError(f"heldout: {s.label}'s final checkpoint and {base.method.label} "
                            f"scored different {suite} items ({len(after)} vs {len(before)})")
        keys = sorted(before)
        s.heldout = {**heldout(suite, [before[k] for k in keys], [after[k] for k in keys]),
                     "base_label": base.method.label, "final_step": final.step,
                     "curve": _curve(before, [r for r in held if r.method.label == s.label
                                              and r.step], suite)}


def _curve(base: dict[str, float], runs: Sequence[CheckpointEval], suite: str
           ) -> list[dict[str, float]]:
    """Mean slice score by training step: the base model at step 0, then each checkpoint
    scored on the same items (one that was not finished is left out)."""
    points = [{"step": 0, "score": sum(base.values()) / len(base)}]
    for r in sorted(runs, key=lambda r: r.step):
        try:
            scores = item_scores(r.out, suite)
        except UserError:
            if r.final:
                raise
            continue
        if set(scores) == set(base):
            points.append({"step": r.step, "score": sum(scores.values()) / len(scores)})
    return points
