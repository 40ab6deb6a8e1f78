"""OpenRLHF's HF exports become ``checkpoints/step-N`` with the run store of that step."""

from __future__ import annotations

import json
from pathlib import Path

from spade.train import _checkpoint as ckpt
from spade.train._state import SNAPSHOT, TrainStore
from spade.train.openrlhf import publish_ready
from spade.train.openrlhf._flags import Layout
from spade.train.openrlhf._shared import snapshot_path
from spade.train.recipe import load_recipe


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


def test_exports_are_moved_and_rotated_as_on_trl(tmp_path: Path) -> None:
    """Each export is on disk once (moved, not copied) and only keep_last published steps
    (plus the best) stay, so disk use does not grow with the run."""
    recipe = load_recipe("tiny").with_overrides(**{"checkpoint.keep_last": 2,
                                                   "checkpoint.every": 2})
    identity = recipe.identity()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    sources = []
    for step in (2, 4, 6, 8):
        sources.append(_export(run_dir, step))
        _snapshot(run_dir, recipe, identity, step)
    assert publish_ready(run_dir, recipe, identity, {}, final=True) == [2, 4, 6, 8]
    assert not any(s.exists() for s in sources)  # moved out of OpenRLHF's folder
    kept = ckpt.checkpoint_steps(run_dir)
    best = (run_dir / ckpt.CHECKPOINTS / ckpt.BEST)
    named = {int(best.read_text().strip().split("-")[1])} if best.is_file() else set()
    assert set(kept) == {6, 8} | named and len(kept) <= 3
    total = sum(f.stat().st_size for f in (run_dir / "openrlhf").rglob("*.safetensors"))
    assert total == 0  # nothing left behind in openrlhf/ckpt


def test_an_export_of_a_published_step_is_removed(tmp_path: Path) -> None:
    recipe = load_recipe("tiny").with_overrides(**{"checkpoint.keep_last": 5})
    identity = recipe.identity()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _export(run_dir, 2)
    _snapshot(run_dir, recipe, identity, 2)
    assert publish_ready(run_dir, recipe, identity, {}, final=True) == [2]
    again = _export(run_dir, 2)  # e.g. left by a crash between OpenRLHF's save and ours
    assert publish_ready(run_dir, recipe, identity, {}, final=True) == []
    assert not again.exists() and ckpt.checkpoint_steps(run_dir) == [2]


def test_the_final_model_is_published_in_the_run_dir_not_ckpt(tmp_path: Path) -> None:
    """OpenRLHF saves the model again after its last step (--ckpt.output_dir, by default
    ./ckpt in the working directory): it goes to openrlhf/final and becomes the last step
    when no export of that step exists (steps not a multiple of checkpoint.every)."""
    from spade.train.openrlhf._flags import command
    from spade.train.openrlhf._launch import publish_final

    recipe = load_recipe("tiny").with_overrides(**{"steps": 3, "checkpoint.every": 2,
                                                   "checkpoint.keep_last": 5,
                                                   "model.device": "cuda",
                                                   "cluster.gpus_per_node": 1})
    identity = recipe.identity()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    args = command(recipe, Layout(run_dir, "/m"), "0.11.2")
    final = Layout(run_dir, "").final
    assert args[args.index("--ckpt.output_dir") + 1] == str(final)
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    _snapshot(run_dir, recipe, identity, 3)
    assert publish_final(run_dir, recipe, identity, {})
    assert ckpt.checkpoint_steps(run_dir) == [3] and not final.exists()
    final.mkdir()  # the same step again: removed, not published twice
    (final / "config.json").write_text("{}")
    assert not publish_final(run_dir, recipe, identity, {}) and not final.exists()
