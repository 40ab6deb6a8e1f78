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


def test_training_and_evaluation_share_the_identity(tmp_path: Path) -> None:
    from eval.providers._checkpoint import model_fingerprint
    from eval.providers._identity import model_identity as run_identity
    from train._run import _model_sha

    model = _model(tmp_path / "m")
    (model / "optimizer.pt").write_text("state")
    ident = model_identity(model)
    assert _model_sha(model) == ident.sha256
    assert model_fingerprint(model)["sha256"] == ident.sha256
    assert run_identity({"spec": "hf:m", "path": str(model)})["sha256"] == ident.sha256
