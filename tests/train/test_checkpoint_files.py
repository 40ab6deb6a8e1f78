"""Checkpoint publication, best.txt and retention, and the eval harness resolving them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade.eval.providers._checkpoint import resolve_checkpoint
from spade.train import _checkpoint as ckpt

from spade.errors import UserError


def _write(run_dir: Path, step: int) -> Path:
    staging = ckpt.staging_dir(run_dir, step)
    staging.mkdir(parents=True)
    (staging / "config.json").write_text(json.dumps({"step": step}))
    (staging / "model.safetensors").write_bytes(b"w" * step)
    return ckpt.publish(run_dir, step, {"recipe": "test"})


def _metrics(returns: dict[int, float]) -> list[dict]:
    return [{"step": s, "agent": {"return_unhinted": r}} for s, r in sorted(returns.items())]


def test_publish_is_a_rename_and_staging_is_invisible(tmp_path: Path) -> None:
    staging = ckpt.staging_dir(tmp_path, 4)
    staging.mkdir(parents=True)
    (staging / "config.json").write_text("{}")
    assert ckpt.checkpoint_steps(tmp_path) == []  # half-written: not a checkpoint
    with pytest.raises(UserError):
        resolve_checkpoint(f"{tmp_path}@latest")
    ckpt.publish(tmp_path, 4, {"recipe": "x"})
    assert not staging.exists() and ckpt.checkpoint_steps(tmp_path) == [4]
    manifest = json.loads((ckpt.step_dir(tmp_path, 4) / ckpt.MANIFEST).read_text())
    assert manifest["step"] == 4 and manifest["recipe"] == "x"
    ckpt.staging_dir(tmp_path, 6).mkdir()
    ckpt.clean_staging(tmp_path)
    assert not ckpt.staging_dir(tmp_path, 6).exists()


def test_best_rule_window_and_retention(tmp_path: Path) -> None:
    metrics = _metrics({0: 0.1, 1: 0.9, 2: 0.2, 3: 0.2, 4: 0.5, 5: 0.5})
    for step in (2, 4, 6):
        _write(tmp_path, step)
        ckpt.update_best(tmp_path, metrics, window=2)
        ckpt.prune(tmp_path, keep_last=1)
    # windows: step-2 -> steps 0-1 (0.5), step-4 -> 2-3 (0.2), step-6 -> 4-5 (0.5, a tie)
    assert (tmp_path / "checkpoints" / "best.txt").read_text().strip() == "step-2"
    assert ckpt.checkpoint_steps(tmp_path) == [2, 6]  # the best survives keep_last=1


def test_eval_harness_resolves_latest_best_and_step(tmp_path: Path) -> None:
    for step in (3, 6):
        _write(tmp_path, step)
    ckpt.update_best(tmp_path, _metrics({2: 1.0, 5: 0.0}), window=3)
    assert resolve_checkpoint(str(tmp_path)) == ckpt.step_dir(tmp_path, 6)
    assert resolve_checkpoint(f"{tmp_path}@latest") == ckpt.step_dir(tmp_path, 6)
    assert resolve_checkpoint(f"{tmp_path}@best") == ckpt.step_dir(tmp_path, 3)
    assert resolve_checkpoint(f"{tmp_path}@step-3") == ckpt.step_dir(tmp_path, 3)
    with pytest.raises(UserError):
        resolve_checkpoint(f"{tmp_path}@step-4")
