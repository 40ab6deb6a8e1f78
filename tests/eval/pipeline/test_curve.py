"""The learning-curve figure: each held-out slice's curve over training, per method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade.eval.pipeline._curve import plot_curves, slice_curves
from spade.eval.pipeline._training import TrainingSummary


def _slice(suite: str, *points: tuple[int, float]) -> dict[str, Any]:
    return {"suite": suite, "base": points[0][1], "final": points[-1][1], "p_value": 0.5,
            "curve": [{"step": s, "score": v} for s, v in points]}


def test_every_slice_gets_each_methods_curve_from_the_base_score() -> None:
    spade = TrainingSummary("SPADE", heldout_slices=[
        _slice("families", (0, 0.2), (8, 0.25), (4, 0.1)), _slice("rg_easy", (0, 0.3), (4, 0.4))])
    fixed = TrainingSummary("fixed", kind="fixed_env",
                            heldout=_slice("families", (0, 0.2), (4, 0.2)))
    got = slice_curves([spade, fixed, TrainingSummary("none")])
    assert got == {"families": {"SPADE": [(0, 0.2), (4, 0.1), (8, 0.25)],
                                "fixed": [(0, 0.2), (4, 0.2)]},
                   "rg_easy": {"SPADE": [(0, 0.3), (4, 0.4)]}}


def test_the_figure_has_a_panel_per_slice(tmp_path: Path) -> None:
    import matplotlib.image

    summaries = [TrainingSummary("SPADE", heldout_slices=[
        _slice("families", (0, 0.2), (8, 0.25)), _slice("rg_easy", (0, 0.3), (8, 0.4))])]
    one = plot_curves([], tmp_path / "one.png")
    three = plot_curves([], tmp_path / "three.png", summaries)
    width = {p.name: matplotlib.image.imread(p).shape[1] for p in (one, three)}
    assert width["three.png"] == 3 * width["one.png"]
