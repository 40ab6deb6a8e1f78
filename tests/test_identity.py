"""One model identity over weights, config, tokenizer and chat template only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from spade.identity import model_identity, model_parts, weight_files

TRAINING_STATE = {"optimizer.pt": "adam moments", "scheduler.pt": "lr state",
                  "rng_state.pth": "rng", "rng_state_0.pth": "rng0",
                  "training_args.bin": "output_dir=/somewhere/run-a"}


def _model(root: Path) -> Path:
    root.mkdir()
    for name, text in [("config.json", "{}"), ("model-00001-of-00002.safetensors", "w1"),
                       ("model-00002-of-00002.safetensors", "w2"),
                       ("pytorch_model.bin", "legacy"), ("tokenizer.json", "{}"),
                       ("tokenizer_config.json", json.dumps({"chat_template": "A"}))]:
        (root / name).write_text(text)
    return root


def test_training_state_is_not_part_of_the_model(tmp_path: Path) -> None:
    model = _model(tmp_path / "a")
    bare = model_identity(model)
    for name, text in TRAINING_STATE.items():
        (model / name).write_text(text)
    assert model_identity(model) == bare
    assert [p.name for p in weight_files(model)] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
        "pytorch_model.bin"]
    # the same files in another directory, with other training state: the same model
    other = tmp_path / "elsewhere" / "b"
    shutil.copytree(model, other)
    (other / "training_args.bin").write_text("output_dir=/elsewhere/run-b")
    (other / "optimizer.pt").write_text("other moments")
    assert model_identity(other) == bare


def test_each_part_is_seen(tmp_path: Path) -> None:
    model = _model(tmp_path / "m")
    base = model_parts(model)
    for part, (name, text) in {"weights": ("pytorch_model.bin", "x"),
                               "config": ("generation_config.json", "{}"),
                               "tokenizer": ("merges.txt", "a b"),
                               "chat_template": ("chat_template.jinja", "B")}.items():
        copy = tmp_path / part
        shutil.copytree(model, copy)
        (copy / name).write_text(text)
        got = model_parts(copy)
        assert [k for k in base if base[k] != got[k]] == [part]


def test_core_identity_imports_no_ml_framework() -> None:
    code = ("import sys, spade.identity; "
            "print([m for m in ('torch', 'transformers', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


def test_training_and_evaluation_records_share_the_identity(tmp_path: Path) -> None:
    """The run identity training binds and the one an evaluation binds both come from
    spade.identity: the same weights elsewhere are the same model, changed weights another."""
    from spade.eval.providers._identity import bound_identity
    from spade.train._run import run_identity
    from spade.train.recipe import load_recipe

    recipe = load_recipe("cpu_demo")
    model = _model(tmp_path / "m")
    (model / "optimizer.pt").write_text("state")
    copy = tmp_path / "elsewhere" / "m"
    shutil.copytree(model, copy)
    (copy / "training_args.bin").write_text("output_dir=/elsewhere")
    changed = tmp_path / "changed"
    shutil.copytree(model, changed)
    (changed / "model-00002-of-00002.safetensors").write_text("w2 trained")

    def train_sha(d: Path) -> object:
        return run_identity(recipe, d)["model_sha256"]

    def eval_sha(d: Path) -> object:
        return bound_identity({"spec": f"hf:{d}", "path": str(d)})["sha256"]

    ident = model_identity(model).sha256
    assert train_sha(model) == train_sha(copy) == ident
    assert eval_sha(model) == eval_sha(copy) == ident
    assert train_sha(changed) == eval_sha(changed) != ident
