"""Committed result records: machine paths made relative, prompts and completions never
copied."""

from __future__ import annotations

import json
from pathlib import Path

from spade.eval.pipeline._records import copy_run, portable

from spade.paths import project_root


def test_paths_become_relative_to_the_project() -> None:
    prefixes = [("/srv/x/spade", "."), ("/srv/x", ".."), ("/home/u", "~")]
    doc = {"data_dir": "/srv/x/data", "model": "hf:/srv/x/spade/runs/t@step-8",
           "cache": "/home/u/.cache/m", "root": "/srv/x/spade", "other": "/srv/xy/z",
           "n": 3, "list": ["/srv/x/spade/a", {"/srv/x/k": "v"}]}
    assert portable(doc, prefixes) == {
        "data_dir": "../data", "model": "hf:./runs/t@step-8", "cache": "~/.cache/m",
        "root": ".", "other": "/srv/xy/z", "n": 3, "list": ["./a", {"../k": "v"}]}


def test_copy_run_keeps_scores_drops_prompts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "samples").mkdir(parents=True)
    (run / "inspect").mkdir()
    (run / "inspect" / "log.json").write_text("{}", encoding="utf-8")
    data_dir = str(project_root().resolve().parent / "shared" / "data")
    (run / "results.json").write_text(json.dumps({"data_dir": data_dir}), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"args": {"data_dir": data_dir}}), encoding="utf-8")
    (run / "samples" / "s.jsonl").write_text(json.dumps(
        {"id": "q1", "sample": 0, "score": 1.0, "prompt_hash": "ab", "completion": "The question",
         "extracted": "B", "details": {"x": 1}}) + "\n", encoding="utf-8")
    target = copy_run(run, tmp_path / "ref")
    assert json.loads((target / "results.json").read_text())["data_dir"] == "../shared/data"
    assert json.loads((target / "run.json").read_text())["args"]["data_dir"] == "../shared/data"
    assert json.loads((target / "samples" / "s.jsonl").read_text()) == {
        "id": "q1", "sample": 0, "score": 1.0, "prompt_hash": "ab"}
    assert not (target / "inspect").exists()
    again = copy_run(run, tmp_path / "ref2", samples=False)
    assert not (again / "samples").exists()


def test_a_linked_shared_folder_is_still_written_as_the_default(tmp_path, monkeypatch):
    """Where ``../shared`` is a link, run records name its target; the copy says ../shared."""
    from spade.eval.pipeline import _records

    real = tmp_path / "elsewhere" / "shared"
    (real / "data").mkdir(parents=True)
    (tmp_path / "work" / "repo").mkdir(parents=True)
    (tmp_path / "work" / "shared").symlink_to(real)
    monkeypatch.setattr(_records, "project_root", lambda: tmp_path / "work" / "repo")
    doc = {"data_dir": str((real / "data").resolve())}
    assert _records.portable(doc) == {"data_dir": "../shared/data"}
