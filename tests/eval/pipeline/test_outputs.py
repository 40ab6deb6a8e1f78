"""Where the pipeline's outputs go and how: beside the runs unless published, all of them
or none (a failed step leaves the previous ones as they were), and the table on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from spade.eval.pipeline._records import copy_run

from spade.cli import main

AIME = [{"id": f"I-{i}", "problem": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(4)]
METRICS = {"step": 0, "agent": {"episodes": 8, "plays_by_origin": {"seed": 8}},
           "designer": {"designs": 4, "valid": 1, "failures_by_stage": {"parse": 3}},
           "pool": {"generation": 1}}


@pytest.fixture()
def experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data" / "aime"
    data.mkdir(parents=True)
    (data / "aime25.jsonl").write_text("".join(json.dumps(r) + "\n" for r in AIME),
                                       encoding="utf-8")
    monkeypatch.setenv("SPADE_DATA_DIR", str(tmp_path / "data"))
    train = tmp_path / "runs" / "train" / "SPADE"
    train.mkdir(parents=True)
    (train / "metrics.jsonl").write_text(json.dumps(METRICS) + "\n", encoding="utf-8")
    doc = {"name": "t", "results_dir": str(tmp_path / "published"),
           "runs_dir": str(tmp_path / "runs"),
           "eval": {"suites": ["aime25"], "preset": "quick", "limit": 2, "samples": 1,
                    "max_tokens": 8},
           "methods": [{"label": "base", "kind": "base", "model": "oracle"},
                       {"label": "SPADE", "kind": "spade", "recipe": "tiny"}]}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_results_stay_beside_the_runs_unless_published(
        experiment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "eval", str(experiment)]) == 0
    out = capsys.readouterr().out
    results = tmp_path / "runs" / "results"
    table = (results / "tables.md").read_text(encoding="utf-8")
    assert out == table and "| base" in out  # the run ends with its table on the console
    assert json.loads((results / "training.json").read_text())[0]["designs"] == 4
    assert (results / "records" / "base" / "base" / "results.json").is_file()
    assert not (tmp_path / "published").exists()
    assert not list(tmp_path.rglob(".*.staging"))
    assert main(["experiment", "eval", str(experiment), "--publish"]) == 0
    assert (tmp_path / "published" / "tables.md").read_text(encoding="utf-8") == table
    assert main(["experiment", "train", str(experiment), "--publish"]) == 2


def test_a_failed_step_leaves_the_previous_outputs_intact(
        experiment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "eval", str(experiment)]) == 0
    results = tmp_path / "runs" / "results"
    before = _snapshot(results)
    metrics = tmp_path / "runs" / "train" / "SPADE" / "metrics.jsonl"
    with metrics.open("a", encoding="utf-8") as fh:
        fh.write('{"step": 1, "agent": {"epis')  # a line cut short
    capsys.readouterr()
    assert main(["experiment", "eval", str(experiment)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and str(metrics) in errors[0] and "Traceback" not in str(err)
    assert _snapshot(results) == before
    assert not list(tmp_path.rglob(".*.staging"))


def test_a_record_copy_replaces_its_target_only_when_complete(tmp_path: Path) -> None:
    run, target = tmp_path / "run", tmp_path / "ref"
    run.mkdir()
    (run / "results.json").write_text('{"a": 1}', encoding="utf-8")
    copy_run(run, target)
    first = _snapshot(target)
    (run / "run.json").write_text('{"b": ', encoding="utf-8")  # damaged
    with pytest.raises(ValueError):
        copy_run(run, target)
    assert _snapshot(target) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref", "run"]


def test_bundled_experiments_write_only_ignored_paths() -> None:
    """A run of any bundled experiment leaves `git status` clean: its runs and its
    (unpublished) results fall under .gitignore."""
    import shutil
    import subprocess

    from spade.eval.pipeline import load_experiment

    from spade.paths import project_root

    root = project_root()
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    for path in sorted((root / "experiments").glob("*.yaml")):
        exp = load_experiment(path)
        for written in (exp.output_dir() / "tables.md", Path(exp.runs_dir) / "train" / "x"):
            done = subprocess.run(["git", "check-ignore", "-q", str(written)], cwd=root)
            assert done.returncode == 0, f"{path.name}: {written} is not ignored by git"


def test_a_failed_step_says_why_in_one_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from spade.eval.pipeline._steps import evaluate_step

    from spade.errors import UserError

    with pytest.raises(UserError) as err:
        evaluate_step("oracle", "base", tmp_path / "run", {"suites": ("aime_2025",)})
    assert "`spade eval run` failed: unknown suite 'aime_2025'" in str(err.value)
    assert "error:" not in capsys.readouterr().err  # said once, by the pipeline
