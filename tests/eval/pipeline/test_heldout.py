"""The held-out slices: their settings, their runs beside the others, and ``heldout`` /
``heldout_slices`` of ``training.json`` computed from the per-item scores of base and each
final checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from spade.eval.pipeline import Experiment, HeldoutSlice, Method, load_experiment
from spade.eval.pipeline._heldout import attach_heldout, heldout_root, heldout_runs, item_scores
from spade.eval.pipeline._preflight import experiment_problems
from spade.eval.pipeline._steps import CheckpointEval
from spade.eval.pipeline._training import TrainingSummary, paired_p_value, render_training

from spade.errors import UserError


def _exp(tmp_path: Path, heldout: dict[str, Any] | list[dict[str, Any]] | None = None
         ) -> Experiment:
    methods = (Method(label="base", kind="base", model="oracle"),
               Method(label="SPADE", kind="spade", recipe="tiny"))
    slices = heldout if isinstance(heldout, list) else [heldout or {}]
    return Experiment(name="t", results_dir=str(tmp_path / "pub"),
                      runs_dir=str(tmp_path / "runs"), methods=methods,
                      heldout=tuple(HeldoutSlice(**h) for h in slices))


def _run(out: Path, scores: dict[str, list[float]], finished: bool = True,
         suite: str = "families") -> None:
    (out / "samples").mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"finished": finished}), encoding="utf-8")
    (out / "samples" / f"{suite}.jsonl").write_text("".join(
        json.dumps({"suite": suite, "id": k, "sample": j, "score": v}) + "\n"
        for k, vs in scores.items() for j, v in enumerate(vs)), encoding="utf-8")


def _scored(exp: Experiment, tmp_path: Path) -> list[CheckpointEval]:
    base, spade = exp.methods
    ev = tmp_path / "runs" / "eval"
    return [CheckpointEval(base, "oracle", 0, ev / "base" / "base", True, True),
            CheckpointEval(spade, "hf:x@step-2", 2, ev / "SPADE" / "step-2", False, False),
            CheckpointEval(spade, "hf:x@step-4", 4, ev / "SPADE" / "step-4", True, True)]


def test_the_base_and_each_final_checkpoint_are_paired_per_item(tmp_path: Path) -> None:
    exp = _exp(tmp_path, {"limit": 6})
    held = heldout_runs(exp, _scored(exp, tmp_path), exp.heldout[0])
    assert [(r.method.label, r.step) for r in held] == [("base", 0), ("SPADE", 4)]
    assert all("heldout" in r.out.parts and "eval" not in r.out.parts for r in held)
    base = {f"m/{i}": [0.0] for i in range(6)}
    final = {f"m/{i}": [1.0] if i < 5 else [0.0] for i in range(6)}
    final["m/0"] = [1.0, 0.0]  # two samples: the item's score is their mean
    _run(held[0].out, base)
    _run(held[1].out, final)
    assert item_scores(held[1].out, "families")["m/0"] == 0.5
    summary = TrainingSummary("SPADE")
    attach_heldout(exp, [summary], _scored(exp, tmp_path))
    h = summary.heldout
    assert h is not None and summary.heldout_slices == [h]
    assert (h["suite"], h["items"], h["base_label"], h["final_step"]) == ("families", 6,
                                                                          "base", 4)
    assert h["base"] == 0.0 and h["final"] == pytest.approx(4.5 / 6)
    assert h["p_value"] == paired_p_value([0.0] * 6, [0.5, 1, 1, 1, 1, 0]) == 1 / 32
    assert set(summary.to_json()["heldout"]) >= {"suite", "base", "final", "p_value"}


def test_every_checkpoint_gives_the_curve_and_the_final_the_test(tmp_path: Path) -> None:
    exp = _exp(tmp_path, {"limit": 4, "checkpoints": "all"})
    assert exp.heldout[0].digest() == HeldoutSlice(limit=4).digest()  # same slice, same runs
    held = heldout_runs(exp, _scored(exp, tmp_path), exp.heldout[0])
    assert [(r.method.label, r.step) for r in held] == [("base", 0), ("SPADE", 2),
                                                        ("SPADE", 4)]
    _run(held[0].out, {f"m/{i}": [0.0] for i in range(4)})
    _run(held[1].out, {f"m/{i}": [float(i < 1)] for i in range(4)})
    _run(held[2].out, {f"m/{i}": [float(i < 3)] for i in range(4)})
    summary = TrainingSummary("SPADE")
    attach_heldout(exp, [summary], _scored(exp, tmp_path))
    h = summary.heldout
    assert h is not None and h["final_step"] == 4 and h["final"] == 0.75
    assert h["curve"] == [{"step": 0, "score": 0.0}, {"step": 2, "score": 0.25},
                          {"step": 4, "score": 0.75}]
    assert "| 0: 0.000, 2: 0.250, 4: 0.750 |" in render_training([summary])


def test_missing_or_mismatched_runs_are_one_line_errors(tmp_path: Path) -> None:
    exp = _exp(tmp_path)
    runs = _scored(exp, tmp_path)
    held = heldout_runs(exp, runs, exp.heldout[0])
    with pytest.raises(UserError, match="no finished evaluation"):
        attach_heldout(exp, [TrainingSummary("SPADE")], runs)
    _run(held[0].out, {"a": [1.0], "b": [0.0]})
    _run(held[1].out, {"a": [1.0]}, finished=True)
    with pytest.raises(UserError, match="different families items"):
        attach_heldout(exp, [TrainingSummary("SPADE")], runs)
    with pytest.raises(UserError, match="no final checkpoint"):
        attach_heldout(exp, [TrainingSummary("other")], runs)


def test_heldout_needs_a_base_method_and_a_known_suite(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="add a method of kind base"):
        Experiment(name="t", results_dir="r", runs_dir="x",
                   methods=(Method(label="S", kind="spade", recipe="tiny"),),
                   heldout=HeldoutSlice())
    exp = _exp(tmp_path, {"suite": "no_such_suite"})
    problems = experiment_problems(exp, "eval").problems
    assert any(p.startswith("heldout: ") and "no_such_suite" in p for p in problems)
    assert HeldoutSlice(limit=8, max_tokens=24).options() == {
        "suites": ("families",), "preset": "paper", "seed": 0, "batch_size": None,
        "protocol": {"samples": None, "max_tokens": 24, "limit": 8, "temperature": None}}


def test_the_cpu_experiment_scores_a_heldout_slice() -> None:
    """The bundled CPU experiment must compare its final checkpoints with the base model
    on held-out work the CPU model scores above zero on (the starter families' held-out
    seeds, and an external benchmark: easy Reasoning Gym datasets), with enough items for a
    paired test."""
    exp = load_experiment()
    assert [h.suite for h in exp.heldout] == ["families", "rg_easy"]
    assert all((h.limit or 0) >= 48 for h in exp.heldout)
    # the families slice as it was before a second slice was added: its runs resume (the
    # batch size is not part of a slice's identity)
    assert exp.heldout[0].digest() == HeldoutSlice(suite="families", limit=96,
                                                   batch_size=32).digest()
    assert exp.heldout[0].checkpoints == "all"


def test_one_slice_or_several(tmp_path: Path) -> None:
    """``heldout:`` takes one mapping (as before) or a list; each slice keeps its own runs
    folder, so adding a slice leaves the runs of the others where they were."""
    doc: dict[str, Any] = {"name": "t", "results_dir": "r", "runs_dir": "x", "methods": [
        {"label": "base", "kind": "base", "model": "oracle"},
        {"label": "S", "kind": "spade", "recipe": "tiny"}]}
    path = tmp_path / "exp.yaml"
    one = {"suite": "families", "limit": 8}
    path.write_text(yaml.safe_dump({**doc, "heldout": one}), encoding="utf-8")
    single = load_experiment(path)
    assert single.heldout == (HeldoutSlice(**one),)
    path.write_text(yaml.safe_dump({**doc, "heldout": [one, {"suite": "rg_easy"}]}),
                    encoding="utf-8")
    both = load_experiment(path)
    assert [h.suite for h in both.heldout] == ["families", "rg_easy"]
    assert heldout_root(both, both.heldout[0]) == heldout_root(single, single.heldout[0])
    assert heldout_root(both, both.heldout[1]) != heldout_root(both, both.heldout[0])
    path.write_text(yaml.safe_dump({**doc, "heldout": None}), encoding="utf-8")
    assert load_experiment(path).heldout == ()
    path.write_text(yaml.safe_dump({**doc, "heldout": [one, {"suite": "families"}]}),
                    encoding="utf-8")
    with pytest.raises(UserError, match="one slice per suite"):
        load_experiment(path)
    path.write_text(yaml.safe_dump({**doc, "heldout": [{"suit": "families"}]}),
                    encoding="utf-8")
    with pytest.raises(UserError, match="suit"):
        load_experiment(path)


def test_two_slices_give_one_record_and_one_row_each(tmp_path: Path) -> None:
    """Each trained method keeps ``heldout`` (the first slice's record, its shape as with
    one slice) and gains ``heldout_slices``; the table has a row per method per slice."""
    exp = _exp(tmp_path, [{"limit": 4, "checkpoints": "all"}, {"suite": "rg_easy"}])
    runs = _scored(exp, tmp_path)
    fam, rg = (heldout_runs(exp, runs, h) for h in exp.heldout)
    assert [r.step for r in fam] == [0, 2, 4] and [r.step for r in rg] == [0, 4]
    for r, won in zip(fam, (0, 1, 2), strict=True):
        _run(r.out, {f"m/{i}": [float(i < won)] for i in range(4)})
    _run(rg[0].out, {"products/0": [1.0], "aiw/0": [0.0]}, suite="rg_easy")
    _run(rg[1].out, {"products/0": [0.5], "aiw/0": [0.0]}, suite="rg_easy")
    summary = TrainingSummary("SPADE")
    attach_heldout(exp, [summary], runs)
    first, second = summary.heldout_slices
    assert summary.heldout == first
    assert set(first) == {"suite", "items", "base", "final", "p_value", "base_label",
                          "final_step", "curve"} == set(second)
    assert (first["suite"], first["items"], first["final"]) == ("families", 4, 0.5)
    assert (second["suite"], second["items"], second["base"], second["final"]) == (
        "rg_easy", 2, 0.5, 0.25)
    assert second["curve"] == [{"step": 0, "score": 0.5}, {"step": 4, "score": 0.25}]
    assert second["p_value"] == 1.0  # final below base
    data = summary.to_json()
    assert data["heldout"] == first and data["heldout_slices"] == [first, second]
    table = render_training([summary])
    assert "| SPADE | families | 4 | 0.000 | 0.500 |" in table
    assert "| SPADE | rg_easy | 2 | 0.500 | 0.250 | 1.0000 | 0: 0.500, 4: 0.250 |" in table


@pytest.mark.slow
@pytest.mark.bwrap
def test_the_eval_step_fills_heldout_with_the_tiny_model(tmp_path: Path,
                                                         tiny_model_dir: Path) -> None:
    """``spade experiment eval`` end to end on the tiny random model: both held-out slices
    are scored on base and the final checkpoint, and training.json's ``heldout`` is filled
    (a training run's final checkpoint stands in as the tiny model's own weights, with
    its metrics line; training itself is the slow pipeline test's)."""
    import shutil

    from spade.train._checkpoint import CHECKPOINTS, MANIFEST

    from spade.cli import main

    run = tmp_path / "runs" / "train" / "SPADE"
    final = run / CHECKPOINTS / "step-3"
    shutil.copytree(tiny_model_dir, final)
    (final / MANIFEST).write_text(json.dumps({"method": {"label": "SPADE", "kind": "spade"}}),
                                  encoding="utf-8")
    (run / "metrics.jsonl").write_text(json.dumps({"step": 3, "agent": {"episodes": 4}})
                                       + "\n", encoding="utf-8")
    doc = {"name": "t", "results_dir": str(tmp_path / "pub"), "runs_dir": str(tmp_path / "runs"),
           "eval": {"suites": ["families"], "limit": 2, "max_tokens": 4},
           "heldout": [{"suite": "families", "limit": 6, "max_tokens": 4},
                       {"suite": "rg_easy", "limit": 6, "max_tokens": 4}],
           "methods": [{"label": "base", "kind": "base", "model": f"hf:{tiny_model_dir}"},
                       {"label": "SPADE", "kind": "spade", "recipe": "tiny"}]}
    exp_file = tmp_path / "exp.yaml"
    exp_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["experiment", "eval", str(exp_file)]) == 0
    results = tmp_path / "runs" / "results"
    training = json.loads((results / "training.json").read_text(encoding="utf-8"))
    held = training[0]["heldout"]
    assert held is not None, "training.json has no heldout for the trained method"
    assert (held["suite"], held["items"], held["final_step"]) == ("families", 6, 3)
    assert 0.0 <= held["base"] <= 1.0 and 0.0 <= held["final"] <= 1.0
    assert 0.0 < held["p_value"] <= 1.0
    table = (results / "tables.md").read_text(encoding="utf-8")
    assert "Held-out slice" in table and "| SPADE | families | 6 |" in table
    assert held == training[0]["heldout_slices"][0]
    assert training[0]["heldout_slices"][1]["suite"] == "rg_easy"
    assert "| SPADE | rg_easy | 6 |" in table
    for suite in ("families", "rg_easy"):
        assert len(list((results / "records").glob(f"*/heldout-{suite}-*/samples/{suite}.jsonl"))
                   ) == 2
