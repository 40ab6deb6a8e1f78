"""The experiment pipeline end to end on the tiny random model: train, score every
checkpoint once, tables and learning curve, resume; the gate on a stored reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from _inputs import require
from spade.eval.pipeline import load_experiment, scored_runs

from spade.cli import main


def _data() -> Path:
    d = require("benchmark_data")
    if not (d / "aime" / "aime25.jsonl").is_file():
        pytest.skip(f"AIME 2025 not found in the benchmark data at {d}")
    return d


def _experiment(tmp_path: Path, model: str, **gate: object) -> Path:
    doc = {
        "name": "t", "results_dir": str(tmp_path / "results"),
        "runs_dir": str(tmp_path / "runs"),
        "eval": {"suites": ["aime25"], "preset": "quick", "limit": 2, "samples": 1,
                 "max_tokens": 8},
        "methods": [{"label": "base", "kind": "base", "model": model},
                    {"label": "SPADE", "kind": "spade", "recipe": "tiny"}],
        "gate": {"suites": ["aime25"], "limit": 12, "samples": 1, "max_tokens": 8,
                 "reference_dir": str(tmp_path / "gate-ref"), **gate},
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.bwrap
def test_train_eval_tables_and_resume(tmp_path: Path, cache_env: Path,
                                      tiny_model_dir: Path) -> None:
    _data()
    exp_file = _experiment(tmp_path, f"hf:{tiny_model_dir}")
    assert main(["experiment", "all", str(exp_file)]) == 0
    exp = load_experiment(exp_file)
    runs = scored_runs(exp)
    # the base model once, then every checkpoint of the trained method (tiny: step 2, 4)
    assert [(r.method.label, r.step) for r in runs] == [("base", 0), ("SPADE", 2),
                                                         ("SPADE", 4)]
    final = json.loads((runs[-1].out / "results.json").read_text())
    assert final["method_kind"] == "spade" and final["checkpoint_final"] is True
    results = tmp_path / "runs" / "results"  # beside the runs: not published
    table = (results / "tables.md").read_text()
    assert "SPADE" in table and "base" in table
    for name in ("tables.tex", "tables.csv", "scores.png", "learning_curve.png",
                 "training_dynamics.png", "experiment.json"):
        assert (results / name).is_file(), name
    assert len(list((results / "records").glob("*/*/results.json"))) == 3
    # rerunning resumes: nothing is trained or scored again
    def stamps() -> dict[Path, int]:
        return {r.out: (r.out / "samples" / "aime25.jsonl").stat().st_mtime_ns for r in runs}

    before = stamps()
    assert main(["experiment", "all", str(exp_file)]) == 0
    assert len(scored_runs(exp)) == 3
    assert stamps() == before


def test_gate_passes_itself_and_fails_a_worse_checkpoint(tmp_path: Path) -> None:
    data = _data()
    exp_file = _experiment(tmp_path, "oracle")
    assert main(["experiment", "gate-reference", "--experiment", str(exp_file)]) == 0
    assert main(["experiment", "gate", "oracle", "--experiment", str(exp_file)]) == 0
    ids = [json.loads(x)["id"] for x in
           (data / "aime" / "aime25.jsonl").read_text().splitlines()[:12]]
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(json.dumps({"suite": "aime25", "id": i, "sample": 0,
                                         "completion": "\\boxed{1000}"}) + "\n" for i in ids))
    assert main(["experiment", "gate", f"replay:{wrong}", "--experiment", str(exp_file)]) == 1


def test_an_edited_protocol_gets_new_evaluations(tmp_path: Path) -> None:
    """Editing the experiment's protocol (here the slice) scores again into new runs:
    no clash with the old runs, and the tables hold only the current protocol."""
    _data()
    exp_file = _experiment(tmp_path, "oracle")
    assert main(["experiment", "eval", str(exp_file)]) == 0
    doc = yaml.safe_load(exp_file.read_text(encoding="utf-8"))
    doc["eval"]["limit"] = 3
    doc["eval"]["batch_size"] = 4  # speed only: not part of the protocol
    exp_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["experiment", "eval", str(exp_file)]) == 0
    runs = sorted((tmp_path / "runs" / "eval").glob("protocol-*/base/base/results.json"))
    assert len(runs) == 2
    record = json.loads((tmp_path / "runs" / "results" / "records" / "base" / "base"
                         / "results.json").read_text())
    assert record["suites"]["aime25"]["n_items"] == 3
    doc["eval"]["batch_size"] = 8
    exp_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["experiment", "eval", str(exp_file)]) == 0
    assert len(list((tmp_path / "runs" / "eval").glob("protocol-*"))) == 2


def test_a_new_gate_slice_gets_new_runs(tmp_path: Path) -> None:
    """Changing the slice (here: few-shot, fewer items) remakes the reference instead of
    clashing with the runs of the old slice; the old slice's runs stay where they were."""
    _data()
    exp_file = _experiment(tmp_path, "oracle")
    assert main(["experiment", "gate-reference", "--experiment", str(exp_file)]) == 0
    exp_file = _experiment(tmp_path, "oracle", suites=["gpqa_diamond"], limit=4, fewshot=2)
    assert main(["experiment", "gate-reference", "--experiment", str(exp_file)]) == 0
    assert len(list((tmp_path / "runs" / "gate").glob("slice-*/reference"))) == 2
    ref = json.loads((tmp_path / "gate-ref" / "results.json").read_text())
    entry = ref["suites"]["gpqa_diamond"]
    assert entry["protocol"]["fewshot"] == 2 and entry["n_items"] == 4
    assert main(["experiment", "gate", "oracle", "--experiment", str(exp_file)]) == 0


@pytest.mark.slow  # ~20 s: 80 two-shot GPQA prompts through the tiny model
def test_the_committed_gate_fails_the_tiny_random_model(
        tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CPU experiment's gate slice against its committed reference (the base model):
    a checkpoint that lost the answer format is caught with exit 1. This also fails when
    the slice is edited without remaking the reference (a protocol mismatch is exit 2)."""
    _data()
    root = Path(__file__).resolve().parents[3]
    doc = yaml.safe_load((root / "experiments" / "cpu.yaml").read_text(encoding="utf-8"))
    doc["runs_dir"] = str(tmp_path / "runs")
    doc["gate"]["reference_dir"] = str(root / doc["gate"]["reference_dir"])
    for method in doc["methods"]:  # a recipe file is relative to the experiment's folder
        if str(method.get("recipe", "")).endswith(".yaml"):
            method["recipe"] = str(root / "experiments" / method["recipe"])
    exp_file = tmp_path / "cpu.yaml"
    exp_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["experiment", "gate", f"hf:{tiny_model_dir}", "--experiment",
                 str(exp_file)]) == 1
    assert "FAIL: candidate is worse on gpqa_diamond" in capsys.readouterr().out


def test_a_bad_experiment_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nresults_dir: r\nruns_dir: r\nmethods: [{label: a, kind: base}]\n")
    assert main(["experiment", "eval", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "methods.0" in err[0]
    bad.write_text("name: x\nwat: 1\n")
    assert main(["experiment", "eval", str(bad)]) == 2
    assert main(["experiment", "eval", str(tmp_path / "none.yaml")]) == 2


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[3] / "experiments")
                                        .glob("*.yaml")), ids=lambda p: p.stem)
def test_bundled_experiments_and_their_recipes_validate(path: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from spade.eval.pipeline._steps import _recipe_file
    from spade.train.recipe import load_recipe

    for var in ("SPADE_QWEN3_4B_INSTRUCT_2507", "SPADE_QWEN3_8B",
                "SPADE_QWEN3_30B_A3B_INSTRUCT_2507", "SPADE_USER_MODEL"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    exp = load_experiment(path).model_copy(update={"runs_dir": str(tmp_path / "runs")})
    if exp.recipe_overrides or path.stem == "cpu":
        assert exp.model_spec(next(m for m in exp.methods if m.kind == "base"))
    for m in exp.methods:
        if m.recipe is not None:
            recipe = load_recipe(_recipe_file(exp, m))
            assert recipe.method.kind == m.kind, (m.label, recipe.method)
