"""``spade experiment`` checks the whole experiment before any compute, and lists every
problem at once (one line, exit 2); nothing is created when it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from spade.eval.pipeline import load_experiment
from spade.eval.pipeline._preflight import experiment_problems

from spade.cli import main

AIME = [{"id": f"I-{i}", "problem": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(4)]


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A benchmark folder with a small AIME 2025 file (``SPADE_DATA_DIR``)."""
    root = tmp_path / "data"
    (root / "aime").mkdir(parents=True)
    (root / "aime" / "aime25.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in AIME), encoding="utf-8")
    monkeypatch.setenv("SPADE_DATA_DIR", str(root))
    return root


def _experiment(tmp_path: Path, **changes: Any) -> Path:
    doc: dict[str, Any] = {
        "name": "t", "results_dir": str(tmp_path / "published"),
        "runs_dir": str(tmp_path / "runs"),
        "eval": {"suites": ["aime25"], "preset": "quick", "limit": 2, "samples": 1,
                 "max_tokens": 8},
        "methods": [{"label": "base", "kind": "base", "model": "oracle"},
                    {"label": "SPADE", "kind": "spade", "recipe": "tiny"}],
    }
    doc.update(changes)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    return errors[0]


@pytest.mark.needs("corpora")  # the SPADE method's recipe reads the bundled corpus
def test_a_sound_experiment_passes(tmp_path: Path, data_dir: Path) -> None:
    exp = load_experiment(_experiment(tmp_path))
    checked = experiment_problems(exp, "train", output=exp.output_dir())
    assert checked.problems == []
    assert checked.disk_needed_gb > 0 and checked.disk_free_gb is not None


@pytest.mark.needs("corpora")  # else the absent corpus is one more problem
def test_every_problem_is_listed_before_training(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(
        tmp_path,
        eval={"suites": ["aime25", "aime_2025"], "preset": "quick", "limit": 2},
        methods=[{"label": "base", "kind": "base", "model": "hf:/nonexistent/base-model"},
                 {"label": "typo", "kind": "base", "model": "hf:"},
                 {"label": "replayed", "kind": "base", "model": "replay:/nonexistent/r.jsonl"},
                 {"label": "SPADE", "kind": "spade", "recipe": "tiny"},
                 {"label": "second", "kind": "ablation", "recipe": "no_such_recipe"}])
    line = _refused(["experiment", "train", str(path)], capsys)
    for needle in ("5 problems", "aime_2025", "/nonexistent/base-model", "method typo",
                   "/nonexistent/r.jsonl", "no_such_recipe"):
        assert needle in line, (needle, line)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("content", "needle"), [
    (b"", "empty"),
    (b"\n\n", "empty"),
    (b'{"id": "I-1", "problem": "x", "answer": "1"}\n{"id": "I-2", "prob', "aime25.jsonl"),
    (b'{"id": "I-1", "problem": "caf\xe9", "answer": "1"}\n', "aime25.jsonl"),
    (None, "aime25.jsonl"),
])
def test_bad_data_is_found_before_training(tmp_path: Path, data_dir: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           content: bytes | None, needle: str) -> None:
    target = data_dir / "aime" / "aime25.jsonl"
    if content is None:
        target.unlink()
    else:
        target.write_bytes(content)
    line = _refused(["experiment", "train", str(_experiment(tmp_path))], capsys)
    assert "suite aime25" in line and needle in line, line
    assert not (tmp_path / "runs").exists()


def test_the_gate_slice_is_checked_too(tmp_path: Path, data_dir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, gate={"suites": ["gpqa-diamond"], "reference_dir":
                                       str(tmp_path / "ref")})
    line = _refused(["experiment", "gate-reference", "--experiment", str(path)], capsys)
    assert "gpqa-diamond" in line
    line = _refused(["experiment", "gate", "hf:/no/such/run@latest", "--experiment",
                     str(path)], capsys)
    assert "/no/such/run" in line


def test_unwritable_runs_and_too_little_disk(tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    path = _experiment(tmp_path, runs_dir=str(tmp_path / "file" / "runs"))
    line = _refused(["experiment", "train", str(path)], capsys)
    assert "is a file, not a directory" in line
    # a model far larger than any disk: its checkpoints cannot fit
    path = _experiment(tmp_path, recipe_overrides={"model": {"num_params": 1.0e15}})
    line = _refused(["experiment", "train", str(path)], capsys)
    assert "disk:" in line and "GB are free" in line


def test_experiment_numbers_are_bounded(tmp_path: Path, data_dir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, eval={"suites": ["aime25"], "samples": 100_000_000})
    line = _refused(["experiment", "eval", str(path)], capsys)
    assert "samples" in line


def test_a_missing_extra_is_found_before_anything_runs(tmp_path: Path, data_dir: Path) -> None:
    """A core install without matplotlib (the eval extra): found by the check, one line
    naming the extra, before any model is scored."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    path = _experiment(tmp_path, methods=[{"label": "base", "kind": "base", "model": "oracle"}])
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from spade.cli import main\n"
            f"raise SystemExit(main(['experiment', 'eval', {str(path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 2, done.stderr
    errors = [x for x in done.stderr.splitlines() if "error:" in x]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "matplotlib is not installed" in errors[0] and "spade-rl[eval]" in errors[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("changes", "needle"), [
    ({"eval": {"suites": []}}, "eval.suites"),
    ({"methods": [{"label": "SPADE!", "kind": "spade", "recipe": "tiny"},
                  {"label": "SPADE?", "kind": "spade", "recipe": "tiny"}]}, "same folder"),
    ({"eval": {"suites": ["aime25"], "user_model": "hf:/no/user/model"}}, "/no/user/model"),
])
def test_more_bad_experiments(tmp_path: Path, data_dir: Path, changes: dict[str, Any],
                              needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(["experiment", "train", str(_experiment(tmp_path, **changes))], capsys)
    assert needle in line, line
    assert not (tmp_path / "runs").exists()


def test_every_bundled_experiments_recipes_load_and_dry_run() -> None:
    """What the check does first for every method of every bundled experiment: a recipe
    that no longer validates (say, a parent gained a setting its child cannot have)
    fails here, not when its turn to train comes."""
    from spade.eval.pipeline._preflight import method_recipe

    from spade.cli._recipe_checks import dry_run_problem
    from spade.paths import project_root

    for path in sorted((project_root() / "experiments").glob("*.yaml")):
        exp = load_experiment(path)
        for m in exp.methods:
            if m.recipe is not None:
                assert dry_run_problem(method_recipe(exp, m)) is None, (path.name, m.label)
