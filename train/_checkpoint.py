"""Checkpoints on disk: ``RUN_DIR/checkpoints/step-<N>/``, published atomically.

A checkpoint directory is a complete transformers model directory (weights, config,
tokenizer with its chat template) plus the trainer's optimiser/scheduler/RNG state, the
run-store copy of that step (``run_state.db``) and ``spade_checkpoint.json``. It is written
under ``checkpoints/.staging-<N>`` and renamed into place when complete, so a reader
(``hf:RUN_DIR@latest``) never sees a half-written one and a crash leaves at most a staging
directory, which the next run removes.

A run resumes from its newest checkpoint only, so only the newest keeps the optimiser and
scheduler state (``RESUME_STATE``: for a 135M model in float32 about 1.1 GB of a 1.6 GB
checkpoint); older kept checkpoints are weights, tokenizer and run store (what evaluation
reads), and their manifest says ``"resume_state": false``. The final checkpoint of a
finished run has none either (nothing resumes a finished run; raising its step count
continues from the final weights with a fresh optimiser and schedule).

``best.txt`` names the best checkpoint by this rule: the highest mean unhinted agent return
over the ``window`` steps ending at the checkpoint's step (the recipe's checkpoint
interval); a tie keeps the earlier one. ``keep_last`` newest checkpoints are kept, plus
the best.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.textfile import atomic_write_text, fsync_dir, fsync_tree

__all__ = ["BEST", "CHECKPOINTS", "RESUME_STATE", "best_rule_score", "checkpoint_steps",
           "clean_staging", "drop_resume_state", "has_resume_state", "publish", "staging_dir",
           "step_dir", "update_best"]

CHECKPOINTS = "checkpoints"
BEST = "best.txt"
MANIFEST = "spade_checkpoint.json"
_STEP = re.compile(r"step-(\d+)")
#: Trainer files only a resume reads (the HF Trainer's optimiser and scheduler state).
RESUME_STATE = ("optimizer.pt", "scheduler.pt")


def step_dir(run_dir: Path, step: int) -> Path:
    return run_dir / CHECKPOINTS / f"step-{step}"


def staging_dir(run_dir: Path, step: int) -> Path:
    return run_dir / CHECKPOINTS / f".staging-{step}"


def checkpoint_steps(run_dir: Path) -> list[int]:
    """Steps with a complete (published) checkpoint, ascending."""
    root = run_dir / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted(int(m.group(1)) for d in root.iterdir()
                  if (m := _STEP.fullmatch(d.name)) and (d / MANIFEST).is_file())


def clean_staging(run_dir: Path) -> None:
    """Remove leftovers of a checkpoint that was being written when a run died."""
    root = run_dir / CHECKPOINTS
    if root.is_dir():
        for d in root.iterdir():
            if d.name.startswith(".staging-"):
                shutil.rmtree(d, ignore_errors=True)


def publish(run_dir: Path, step: int, manifest: dict[str, Any]) -> Path:
    """Rename the complete staging directory of ``step`` to ``step-<N>`` (atomic)."""
    staging = staging_dir(run_dir, step)
    (staging / MANIFEST).write_text(json.dumps({"step": step, **manifest}, indent=2,
                                               sort_keys=True), encoding="utf-8")
    fsync_tree(staging)
    target = step_dir(run_dir, step)
    if target.exists():  # a rerun of the same step after a resume: replace it
        shutil.rmtree(target)
    os.replace(staging, target)
    fsync_dir(target.parent)
    return target


def best_rule_score(metrics: Sequence[dict[str, Any]], step: int, window: int
                    ) -> float | None:
    """Mean unhinted agent return over steps ``step-window+1 .. step`` (None without plays)."""
    values = [m["agent"]["return_unhinted"] for m in metrics
              if step - window < m["step"] <= step
              and m.get("agent", {}).get("return_unhinted") is not None]
    return sum(values) / len(values) if values else None


def update_best(run_dir: Path, metrics: Sequence[dict[str, Any]], window: int) -> str | None:
    """Recompute ``best.txt`` over the published checkpoints (pruning never removes the
    best, so the maximum over those kept is the maximum over all ever written)."""
    best: tuple[float, int] | None = None
    for s in checkpoint_steps(run_dir):
        score = best_rule_score(metrics, s, window)
        if score is not None and (best is None or score > best[0]):
            best = (score, s)
    if best is None:
        return None
    name = f"step-{best[1]}"
    path = run_dir / CHECKPOINTS / BEST
    atomic_write_text(path, name + "\n")
    return name


def prune(run_dir: Path, keep_last: int) -> list[int]:
    """Delete all but the ``keep_last`` newest checkpoints (and the best); returns deleted."""
    steps = checkpoint_steps(run_dir)
    marker = run_dir / CHECKPOINTS / BEST
    best = marker.read_text(encoding="utf-8").strip() if marker.is_file() else None
    doomed = [s for s in steps[:-keep_last] if f"step-{s}" != best]
    for s in doomed:
        shutil.rmtree(step_dir(run_dir, s), ignore_errors=True)
    return doomed


def has_resume_state(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` holds the optimiser and scheduler state a resume reads."""
    return all((checkpoint / name).is_file() for name in RESUME_STATE)


def drop_resume_state(run_dir: Path) -> list[int]:
    """Remove ``RESUME_STATE`` from every published checkpoint but the newest (the one a
    resume reads); returns the steps it was removed from."""
    steps = checkpoint_steps(run_dir)
    done = []
    for s in steps[:-1]:
        d = step_dir(run_dir, s)
        present = [d / name for name in RESUME_STATE if (d / name).exists()]
        if not present:
            continue
        manifest = d / MANIFEST
        data = json.loads(manifest.read_text(encoding="utf-8"))
        data["resume_state"] = False
        atomic_write_text(manifest, json.dumps(data, indent=2, sort_keys=True))
        for path in present:
            path.unlink()
        done.append(s)
    return done
