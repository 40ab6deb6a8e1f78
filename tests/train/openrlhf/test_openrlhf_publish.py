"""OpenRLHF's HF exports become ``checkpoints/step-N`` with the run store of that step."""

from __future__ import annotations

import json
from pathlib import Path

from train import _checkpoint as ckpt
from train._state import SNAPSHOT, TrainStore
from train.openrlhf import publish_ready
from train.openrlhf._flags import Layout
from train.openrlhf._shared import snapshot_path
from train.recipe import load_recipe


def _export(run_dir: Path, step: int) -> Path:
    d = Layout(run_dir, "").ckpt / f"global_step{step}_hf"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"step": step}))
    (d / "model.safetensors").write_bytes(b"weights")
    return d


def _snapshot(run_dir: Path, recipe, identity, step: int) -> None:  # type: ignore[no-untyped-def]
    store = TrainStore.open(run_dir, recipe, resume=True, identity=identity)
    try:
        target = snapshot_path(run_dir, step)
        target.parent.mkdir(parents=True, exist_ok=True)
        store.snapshot(target)
    finally:
        store.close()


def test_complete_exports_are_published_with_their_store(tmp_path: Path) -> None:
    recipe = load_recipe("tiny").with_overrides(**{"checkpoint.keep_last": 5})
    identity = recipe.identity()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for step in (2, 4):
        _export(run_dir, step)
        _snapshot(run_dir, recipe, identity, step)
    # while the run goes on, the newest export may still be being written
    assert publish_ready(run_dir, recipe, identity, {}, final=False) == [2]
    assert ckpt.checkpoint_steps(run_dir) == [2]
    # at the end every export is complete
    assert publish_ready(run_dir, recipe, identity, {}, final=True) == [4]
    for step in (2, 4):
        d = ckpt.step_dir(run_dir, step)
        assert (d / SNAPSHOT).is_file() and (d / "model.safetensors").read_bytes() == b"weights"
        manifest = json.loads((d / ckpt.MANIFEST).read_text())
        assert manifest["step"] == step and manifest["last_step"] == step - 1
    assert publish_ready(run_dir, recipe, identity, {}, final=True) == []


def test_an_export_without_its_closed_step_is_not_published(tmp_path: Path) -> None:
    recipe = load_recipe("tiny")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _export(run_dir, 2)  # OpenRLHF saved step 2, but SPADE never closed step 1's rollout
    assert publish_ready(run_dir, recipe, recipe.identity(), {}, final=True) == []
    assert ckpt.checkpoint_steps(run_dir) == []
