"""`spade train` input handling: dry run, bad recipes, GPU recipes on a CPU machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade.cli import main


def test_dry_run_prints_resolved_recipe_batch_and_memory(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["train", "--recipe", "games_qwen3_30b_a3b", "--dry-run", "--steps", "10"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recipe"]["steps"] == 10 and out["recipe"]["name"] == "games_qwen3_30b_a3b"
    assert out["batch"]["samples_per_step"] == 192
    assert out["batch"]["designs_per_regeneration"] == 24
    assert out["memory_estimate"]["num_params"] == pytest.approx(30.5e9)
    assert out["memory_estimate"]["total_gb"] > 100


def test_dry_run_counts_a_local_model_without_loading_it(
        capsys: pytest.CaptureFixture[str], cache_env: Path) -> None:
    assert main(["train", "--recipe", "tiny", "--dry-run"]) == 0
    estimate = json.loads(capsys.readouterr().out)["memory_estimate"]
    assert 1e3 < estimate["num_params"] < 1e6


@pytest.mark.parametrize(("body", "needle"), [
    ("extends: tiny.yaml\nmodel: {pth: x}\n", "model.pth"),
    ("extends: tiny.yaml\ngrpo: {tickets_per_step: 1}\n", "prompts_per_cycle"),
    ("- a\n- b\n", "mapping"),
])
def test_bad_recipe_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       body: str, needle: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(body)
    assert main(["train", "--recipe", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and err.startswith("spade train: error")


def test_missing_recipe_and_gpu_recipe_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["train", "--recipe", str(tmp_path / "none.yaml")]) == 2
    assert "not found" in capsys.readouterr().err
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("SPADE_QWEN3_4B_INSTRUCT_2507", str(tmp_path))
    assert main(["train", "--recipe", "games_qwen3_4b", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_resume_of_nothing_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      cache_env: Path) -> None:
    assert main(["train", "--recipe", "tiny", "--resume", "--run-dir", str(tmp_path / "x")]) == 2
    assert "--resume" in capsys.readouterr().err
