"""Which checkpoints of a trained method the pipeline scores (``eval.checkpoints``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade.eval.pipeline import load_experiment, scored_runs
from spade.train._checkpoint import BEST, CHECKPOINTS, MANIFEST


def _experiment(tmp_path: Path, which: str) -> Path:
    path = tmp_path / f"exp-{which}.yaml"
    path.write_text(
        f"name: t\nresults_dir: {tmp_path}/results\nruns_dir: {tmp_path}/runs\n"
        f"eval: {{suites: [aime25], checkpoints: {which}}}\n"
        "methods:\n  - {label: base, kind: base, model: oracle}\n"
        "  - {label: SPADE, kind: spade, recipe: tiny}\n", encoding="utf-8")
    ckpts = tmp_path / "runs" / "train" / "SPADE" / CHECKPOINTS
    for step in (2, 4, 6):
        (ckpts / f"step-{step}").mkdir(parents=True, exist_ok=True)
        (ckpts / f"step-{step}" / MANIFEST).write_text("{}", encoding="utf-8")
    (ckpts / BEST).write_text("step-2\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("which", "steps"), [("all", [2, 4, 6]), ("final_and_best", [2, 6]),
                                              ("final", [6])])
def test_checkpoints_scored(tmp_path: Path, which: str, steps: list[int]) -> None:
    runs = scored_runs(load_experiment(_experiment(tmp_path, which)))
    trained = [r for r in runs if r.method.label == "SPADE"]
    assert [r.step for r in trained] == steps
    assert [r.final for r in trained] == [s == 6 for s in steps]
    assert [r.best for r in trained] == [s == 2 for s in steps]
