"""A grouped bar chart of a Report (one panel per benchmark group) with 95% error bars.

A run without a score for a column gets an empty hatched box labelled ``missing`` (or
``n/a``, ``error``), and an exact 0% gets a "0" label, so the two are never confused.

matplotlib is imported lazily and driven through the object API with the Agg canvas, so no
global backend or pyplot state is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade.eval.report import _columns
from spade.eval.report._rows import Cell
from spade.eval.report._table import Report

from spade.errors import UserError

#: Heights of the placeholder drawn where a run has no score (a 0% score has no bar).
_PLACEHOLDER = 100.0


def _mark_empty_and_zero(ax: Any, xs: list[float], cells: list[Cell], width: float) -> None:
    """A run's missing score: an empty hatched full-height box labelled with its state;
    a score of exactly 0%: a "0" label on the axis, so the two never look alike."""
    for x, cell in zip(xs, cells, strict=True):
        if cell.value is None:
            ax.bar([x], [_PLACEHOLDER], width, fill=False, hatch="xx", edgecolor="0.6",
                   linewidth=0.5)
            ax.text(x, 50, cell.state if cell.state != "ok" else "missing", rotation=90,
                    ha="center", va="center", fontsize="x-small", color="0.35")
        elif cell.value == 0.0:
            ax.text(x, 1.0, "0", ha="center", va="bottom", fontsize="x-small")


def plot_report(report: Report, path: str | Path, *, dpi: int = 120) -> Path:
    """Write a PNG bar chart: x = benchmark columns + Avg, one bar per row; returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    tables = [t for t in report.tables if t.rows]
    if not tables:
        raise UserError("nothing to plot: the report has no rows")
    widest = max(len(t.columns) + 1 for t in tables)
    fig = Figure(figsize=(max(7.0, 1.2 * widest + 2.0), 5.2 * len(tables)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(tables), 1, squeeze=False)[:, 0]
    for ax, table in zip(axes, tables, strict=True):
        labels = [_columns.label(k) for k in table.columns] + ["Avg"]
        n_rows = len(table.rows)
        width = 0.8 / max(n_rows, 1)
        for i, tr in enumerate(table.rows):
            cells = [*tr.cells, tr.average]
            xs = [j - 0.4 + width * (i + 0.5) for j in range(len(cells))]
            heights = [100 * c.value if c.value is not None else 0.0 for c in cells]
            half = [100 * (c.half95 or 0.0) for c in cells]
            present = [c.value is not None for c in cells]
            # whiskers clipped to the score range [0, 100]
            low = [min(e, h) for e, h, p in zip(half, heights, present, strict=True) if p]
            high = [min(e, 100 - h) for e, h, p in zip(half, heights, present, strict=True) if p]
            ax.bar(
                [x for x, p in zip(xs, present, strict=True) if p],
                [h for h, p in zip(heights, present, strict=True) if p],
                width,
                yerr=None if tr.row.is_reference else [low, high],
                capsize=3,
                label=tr.row.display,
                hatch="//" if tr.row.is_reference else None,
                alpha=0.7 if tr.row.is_reference else 1.0,
            )
            if not tr.row.is_reference:
                _mark_empty_and_zero(ax, xs, cells, width)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, ha="right")
        ax.set_ylabel("score (%), whiskers: 95% interval")
        ax.set_ylim(0, 105)
        ax.set_title(table.title)
        ax.legend(
            fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(3, n_rows)
        )
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path
