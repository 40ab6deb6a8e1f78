"""A model with the same identity as one already scored takes that run's samples over, and
only then: other weights, other arguments or code that is not a clean commit generate."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from _evalrun import data_dir, results, samples
from spade.eval import _runner

CLEAN = {"spade": "0", "git_commit": "a" * 40, "git_dirty": False}


@pytest.fixture()
def clean_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code version a clean checkout reports (a working tree under edit is dirty)."""
    monkeypatch.setattr(_runner, "code_version", lambda: dict(CLEAN))


def _run(model: Path, out: Path, twins: tuple[Path, ...] = (), **protocol: Any) -> None:
    from spade.eval.cli import eval_config

    cfg = eval_config(f"hf:{model}", "aime24", out=out, data_dir=data_dir(), device="cpu",
                      protocol={"limit": 2, "samples": 1, "max_tokens": 6, "temperature": 0.0,
                                **protocol}, quiet=True)
    _runner.run_eval(dataclasses.replace(cfg, twins=twins))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_same_identity_takes_the_samples_generation_would_give(
        tmp_path: Path, tiny_model_dir: Path, clean_code: None) -> None:
    first = _copy(tiny_model_dir, tmp_path / "base")
    same = _copy(tiny_model_dir, tmp_path / "step-4")  # a checkpoint whose weights never moved
    _run(first, tmp_path / "a")
    _run(same, tmp_path / "b", twins=(tmp_path / "a",))
    _run(same, tmp_path / "c")  # generated: what the taken-over samples must equal
    entry = results(tmp_path / "b")["suites"]["aime24"]
    assert entry["samples_from"] == str(tmp_path / "a")
    assert "samples_from" not in results(tmp_path / "c")["suites"]["aime24"]
    strip = [{k: v for k, v in r.items() if k != "time_s"} for r in samples(tmp_path / "c",
                                                                         "aime24")]
    assert [{k: v for k, v in r.items() if k != "time_s"}
            for r in samples(tmp_path / "b", "aime24")] == strip
    assert entry["score"] == results(tmp_path / "c")["suites"]["aime24"]["score"]
    assert results(tmp_path / "b")["model"]["spec"] == f"hf:{same}"  # still its own model
    _run(same, tmp_path / "b", twins=(tmp_path / "a",))  # a rerun (resume) still names them
    assert results(tmp_path / "b")["suites"]["aime24"]["samples_from"] == str(tmp_path / "a")
    _run(same, tmp_path / "b")
    assert results(tmp_path / "b")["suites"]["aime24"]["samples_from"] == str(tmp_path / "a")


def test_other_weights_arguments_or_code_generate(
        tmp_path: Path, tiny_model_dir: Path, clean_code: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    _run(_copy(tiny_model_dir, tmp_path / "base"), tmp_path / "a")
    moved = _copy(tiny_model_dir, tmp_path / "moved")
    weights = next(moved.glob("*.safetensors"))
    tensors = load_file(weights)
    name = next(iter(tensors))
    tensors[name] = tensors[name] + torch.full_like(tensors[name], 1e-3)
    save_file(tensors, weights, metadata={"format": "pt"})
    _run(moved, tmp_path / "b", twins=(tmp_path / "a",))
    assert "samples_from" not in results(tmp_path / "b")["suites"]["aime24"]
    _run(tiny_model_dir, tmp_path / "c", twins=(tmp_path / "a",), max_tokens=7)
    assert "samples_from" not in results(tmp_path / "c")["suites"]["aime24"]
    monkeypatch.setattr(_runner, "code_version", lambda: {**CLEAN, "git_dirty": True})
    _run(tiny_model_dir, tmp_path / "d", twins=(tmp_path / "a",))
    assert "samples_from" not in results(tmp_path / "d")["suites"]["aime24"]


def test_a_copy_is_never_a_source(tmp_path: Path, tiny_model_dir: Path,
                                  clean_code: None) -> None:
    """Samples come from the run that generated them; a run holding taken-over ones is
    passed by (the next twin is used, or generation)."""
    _run(tiny_model_dir, tmp_path / "a")
    _run(tiny_model_dir, tmp_path / "b", twins=(tmp_path / "a",))
    _run(tiny_model_dir, tmp_path / "c", twins=(tmp_path / "b", tmp_path / "a"))
    assert results(tmp_path / "c")["suites"]["aime24"]["samples_from"] == str(tmp_path / "a")
