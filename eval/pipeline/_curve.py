"""Learning curves: the suite average of every scored checkpoint, per method."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.eval._runs import load_run

__all__ = ["curve_points", "plot_curves"]


def curve_points(runs: Sequence[Any]) -> dict[str, list[tuple[int, float]]]:
    """method label -> [(step, mean score over the suites it has, in %)], by step."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in runs:
        run = load_run(r.out)
        scores = [s.score for s in run.suites.values() if s.has_score and s.score is not None]
        if scores:
            out.setdefault(r.method.label, []).append((r.step, 100 * sum(scores) / len(scores)))
    return {k: sorted(v) for k, v in out.items()}


def plot_curves(runs: Sequence[Any], target: Path) -> Path:
    """A PNG: one line per trained method, the base model as a dashed level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = curve_points(runs)
    base = {r.method.label for r in runs if r.method.kind == "base"}
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, pts in points.items():
        if label in base:
            ax.axhline(pts[0][1], linestyle="--", color="grey", label=f"{label} (base)")
        else:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("training step (checkpoint)")
    ax.set_ylabel("suite average (%)")
    ax.set_title("Score per checkpoint")
    ax.legend(fontsize=8)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)
    return target
