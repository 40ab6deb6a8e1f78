"""Learning curves: the suite average of every scored checkpoint, per method, and each
held-out slice's score by training step (the base model at step 0), per trained method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spade.eval._runs import load_run

__all__ = ["curve_points", "plot_curves", "slice_curves"]


def curve_points(runs: Sequence[Any]) -> dict[str, list[tuple[int, float]]]:
    """method label -> [(step, mean score over the suites it has, in %)], by step."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in runs:
        run = load_run(r.out)
        scores = [s.score for s in run.suites.values() if s.has_score and s.score is not None]
        if scores:
            out.setdefault(r.method.label, []).append((r.step, 100 * sum(scores) / len(scores)))
    return {k: sorted(v) for k, v in out.items()}


def slice_curves(summaries: Sequence[Any]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """suite -> method label -> [(step, slice score)] from the training summaries' held-out
    records (each curve starts at the base model's score, step 0)."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for s in summaries:
        for h in s.slice_records:
            pts = [(int(p["step"]), float(p["score"])) for p in h.get("curve", [])]
            if pts:
                out.setdefault(str(h["suite"]), {})[s.label] = sorted(pts)
    return out


def plot_curves(runs: Sequence[Any], target: Path, summaries: Sequence[Any] = ()) -> Path:
    """A PNG: the suite average per checkpoint (one line per trained method, the base model
    as a dashed level), then one panel per held-out slice with its curve over training."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slices = slice_curves(summaries)
    fig, axes = plt.subplots(1, 1 + len(slices), figsize=(6.4 * (1 + len(slices)), 4.0),
                             squeeze=False)
    _suite_panel(axes[0][0], runs)
    for ax, (suite, curves) in zip(axes[0][1:], sorted(slices.items()), strict=True):
        _slice_panel(ax, suite, curves)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)
    return target


def _suite_panel(ax: Any, runs: Sequence[Any]) -> None:
    points = curve_points(runs)
    base = {r.method.label for r in runs if r.method.kind == "base"}
    for label, pts in points.items():
        if label in base:
            ax.axhline(pts[0][1], linestyle="--", color="grey", label=f"{label} (base)")
        else:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("training step (checkpoint)")
    ax.set_ylabel("suite average (%)")
    ax.set_title("Score per checkpoint")
    if points:
        ax.legend(fontsize=8)


def _slice_panel(ax: Any, suite: str, curves: Mapping[str, list[tuple[int, float]]]) -> None:
    base = next(iter(curves.values()))[0][1]
    ax.axhline(base, linestyle="--", color="grey", label="base (step 0)")
    for label, pts in curves.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("training step (checkpoint)")
    ax.set_ylabel("mean score")
    ax.set_title(f"Held-out slice: {suite}")
    ax.legend(fontsize=8)
