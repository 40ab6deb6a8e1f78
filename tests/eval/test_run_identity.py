"""A run directory is bound to its model's and its data's bytes: resuming with either
changed is refused in one line naming the change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results

from spade.identity import model_parts


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _replay(path: Path, answer: str, n: int = 3) -> Path:
    lines = [{"suite": "aime24", "id": i, "sample": 0, "completion": f"\\\\boxed{{{answer}}}"}
             for i in range(60, 60 + n)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_replaced_replay_file_is_refused_on_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = _replay(tmp_path / "model.jsonl", "1")
    out = tmp_path / "run"
    args = ["--model", f"replay:{replay}", "--suites", "aime24", "--samples", "1",
            "--limit", "2", "--out", str(out), "--data-dir", str(data_dir())]
    assert cli(*args) == 0
    sha = results(out)["model"]["sha256"]
    _replay(replay, "2")  # another model's completions under the same name
    assert cli(*args) == 2
    line = _one_line(capsys)
    assert "different model" in line and sha[:12] in line and "--new-run" in line
    assert results(out)["model"]["sha256"] == sha  # nothing was mixed in
    assert cli(*args, "--new-run") == 0  # starting over is explicit
    assert results(out)["model"]["sha256"] != sha
    assert (tmp_path / "run.prev-1" / "run.json").is_file()


def test_changed_data_file_is_refused_on_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    (data / "aime").mkdir(parents=True)
    src = (data_dir() / "aime" / "aime24.jsonl").read_text()
    (data / "aime" / "aime24.jsonl").write_text(src)
    out = tmp_path / "run"
    args = ["--model", "oracle", "--suites", "aime24", "--samples", "1", "--limit", "2",
            "--out", str(out), "--data-dir", str(data)]
    assert cli(*args) == 0
    (data / "aime" / "aime24.jsonl").write_text(src.replace('"answer":"204"', '"answer":"205"'))
    assert cli(*args) == 2
    line = _one_line(capsys)
    assert "different data file aime/aime24.jsonl" in line


def test_model_identity_covers_weights_config_tokenizer_template(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    for name, text in [("config.json", "{}"), ("model.safetensors", "w"),
                       ("tokenizer.json", "{}"),
                       ("tokenizer_config.json", json.dumps({"chat_template": "A"}))]:
        (model / name).write_text(text)
    base = model_parts(model)
    changes = {
        "weights": ("model.safetensors", "w2"),
        "config": ("config.json", '{"x": 1}'),
        "tokenizer": ("tokenizer.json", '{"v": 1}'),
        "chat_template": ("chat_template.jinja", "B"),
    }
    for part, (name, text) in changes.items():
        copy = tmp_path / part
        shutil.copytree(model, copy)
        (copy / name).write_text(text)
        got = model_parts(copy)
        assert [k for k in base if base[k] != got[k]] == [part]


def test_a_run_bound_under_the_old_identity_rule_is_named_as_such(tmp_path: Path) -> None:
    from spade.eval.providers._identity import bound_identity, describe_change

    model = tmp_path / "ckpt"
    model.mkdir()
    for name, text in [("config.json", "{}"), ("model.safetensors", "w"),
                       ("optimizer.pt", "moments"), ("training_args.bin", "output_dir")]:
        (model / name).write_text(text)
    new = bound_identity({"spec": "hf:ckpt", "path": str(model)})
    assert new["identity_version"] == 2 and new["sha256_scope"] == "+".join(
        ("weights", "config", "tokenizer", "chat_template"))
    old = {**new, "sha256_parts": {**new["sha256_parts"], "weights": "0" * 64}}
    del old["identity_version"]  # what a run made before the rule recorded
    assert "identity rule" in describe_change(old, new)
    assert "weights" in describe_change({**old, "identity_version": 2}, new)
