"""The one file-IO module: atomic writes, JSON lines, and the leftovers a killed write
leaves (which a run directory still counts as its own)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from spade.eval.store import RUN_FILE, EvalStore

from spade.errors import UserError
from spade.rundir import claim_run_dir
from spade.textfile import (
    append_jsonl,
    atomic_copy,
    atomic_write_text,
    drop_torn_tail,
    fresh_stage,
    fsync_tree,
    iter_jsonl,
    jsonl_text,
    parse_jsonl,
    partial_write_of,
    read_jsonl,
    recover,
    swap_in,
    write_jsonl,
)


def _killed_write(target: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary an atomic write of ``target`` leaves when killed before its rename."""
    seen: list[str] = []

    def crash(src: str, dst: str) -> None:
        seen.append(src)
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(os, "replace", crash)
        with pytest.raises(KeyboardInterrupt):
            atomic_write_text(target, "half")
    # the write removes its temporary on the way out; a SIGKILL would not, so put it back
    leftover = Path(seen[0])
    leftover.write_text("half", encoding="utf-8")
    return leftover


def test_atomic_write_replaces_whole_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    atomic_write_text(target, "old\n")
    target.chmod(0o600)
    atomic_write_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_killed_write_leaves_a_recognisable_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leftover = _killed_write(tmp_path / RUN_FILE, monkeypatch)
    assert partial_write_of(leftover.name) == RUN_FILE
    for other in (RUN_FILE, f"{RUN_FILE}.tmp", ".run.json.tmp", "notes.txt"):
        assert partial_write_of(other) is None


def test_run_dirs_count_a_killed_write_of_their_own_files_as_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _killed_write(run / "metrics.jsonl", monkeypatch)
    assert claim_run_dir(run, holds_run=lambda d: False, own_names={"metrics.jsonl"}) is False
    with pytest.raises(UserError, match="not empty"):
        claim_run_dir(run, holds_run=lambda d: False, own_names={"other.jsonl"})


def test_an_eval_run_killed_while_writing_run_json_starts_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "eval"
    (out / "samples").mkdir(parents=True)
    _killed_write(out / RUN_FILE, monkeypatch)
    assert EvalStore(out).open({"suites": ["aime24"]}) is False
    assert json.loads((out / RUN_FILE).read_text())["args"] == {"suites": ["aime24"]}
    (out / "stray.txt").write_text("not ours")
    (out / RUN_FILE).unlink()
    with pytest.raises(UserError, match="not an evaluation run directory"):
        EvalStore(out).open({"suites": ["aime24"]})


def test_jsonl_round_trip_append_and_blank_lines(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": "é"}, [1, 2], "x"]
    path = write_jsonl(tmp_path / "rows.jsonl", rows, ensure_ascii=False)
    assert path.read_text(encoding="utf-8") == jsonl_text(rows, ensure_ascii=False)
    assert "é" in path.read_text(encoding="utf-8")
    append_jsonl(path, [{"c": 3}])
    append_jsonl(path, [])  # nothing to add: the file is untouched
    assert read_jsonl(path) == [*rows, {"c": 3}]
    assert parse_jsonl('{"a": 1}\n\n  \n{"b": 2}\n') == [{"a": 1}, {"b": 2}]
    assert jsonl_text([{"a": 1}], separators=(",", ":")) == '{"a":1}\n'
    with pytest.raises(json.JSONDecodeError) as info:
        parse_jsonl('{"a": 1}\n\n{"b": \n')
    assert (info.value.lineno, info.value.msg) == (3, "Expecting value")  # the file's line


def test_iter_jsonl_names_the_line_or_skips_it(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"a": 1}\n\n[2]\n{"b": \n"x"\n', encoding="utf-8")
    with pytest.raises(UserError) as info:
        list(iter_jsonl(path, "samples file"))
    assert str(info.value) == (f"samples file {path}:4 is not JSON "
                               "(Expecting value, column 7)")

    class Damaged(UserError):
        pass

    with pytest.raises(Damaged, match=r":4 is not JSON"):
        list(iter_jsonl(path, error=Damaged))
    assert list(iter_jsonl(path, skip_invalid=True)) == [(1, {"a": 1}), (3, [2]), (5, "x")]
    path.write_bytes(b'{"a": 1}\n\0')
    with pytest.raises(UserError, match=r"samples file .*:2 is binary"):
        list(iter_jsonl(path, "samples file"))
    with pytest.raises(UserError, match="replay file not found"):
        list(iter_jsonl(tmp_path / "absent.jsonl", "replay file"))


def test_jsonl_lines_end_at_newline_only(tmp_path: Path) -> None:
    rows = [{"text": "a\u2028b\u2029c\x85d\x0be"}, {"n": 2}]
    path = write_jsonl(tmp_path / "rows.jsonl", rows, ensure_ascii=False)
    assert "\u2028" in path.read_text(encoding="utf-8")  # raw, as the eval store writes it
    assert read_jsonl(path) == rows
    assert list(iter_jsonl(path)) == [(1, rows[0]), (2, rows[1])]
    assert parse_jsonl('{"a": 1}\r\n\r\n{"b": 2}\r\n') == [{"a": 1}, {"b": 2}]
    with pytest.raises(json.JSONDecodeError) as info:
        parse_jsonl('{"a": "\u2028"}\n{"b": \n')
    assert info.value.lineno == 2


def test_a_torn_tail_is_cut_off_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    append_jsonl(path, [{"a": 1}])
    with path.open("ab") as fh:
        fh.write(b'{"b": "\xc3')  # killed mid-line, mid-character
    drop_torn_tail(path)
    assert path.read_bytes() == b'{"a": 1}\n'
    drop_torn_tail(path)  # a whole file is left as it is
    append_jsonl(path, [{"c": 3}])
    assert read_jsonl(path) == [{"a": 1}, {"c": 3}]
    path.write_bytes(b"torn")
    drop_torn_tail(path)
    assert path.read_bytes() == b""


def test_atomic_copy_replaces_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = tmp_path / "snapshot.db", tmp_path / "state.db"
    source.write_bytes(b"\0new" * 100_000)
    target.write_bytes(b"old")
    def killed(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:  # killed before the rename: the old file, no temporary
        m.setattr(os, "replace", killed)
        with pytest.raises(KeyboardInterrupt):
            atomic_copy(source, target)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot.db", "state.db"]
    atomic_copy(source, target)
    assert target.read_bytes() == source.read_bytes()


def test_a_folder_is_swapped_in_whole_and_a_half_swap_recovered(tmp_path: Path) -> None:
    target = tmp_path / "results"
    for content in ("first", "second"):
        stage = fresh_stage(target)
        (stage / "sub").mkdir()
        (stage / "sub" / "table.md").write_text(content, encoding="utf-8")
        fsync_tree(stage)
        swap_in(stage, target)
        assert (target / "sub" / "table.md").read_text(encoding="utf-8") == content
        assert [p.name for p in tmp_path.iterdir()] == ["results"]
    # killed between the two renames: the previous folder is beside it, target gone
    target.rename(tmp_path / ".results.previous")
    stage = fresh_stage(target)  # recovers first
    assert (target / "sub" / "table.md").read_text(encoding="utf-8") == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".results.staging", "results"]
    stage.rmdir()
    (tmp_path / ".results.previous").mkdir()
    recover(target)  # a target in place is never replaced by a leftover
    assert (target / "sub" / "table.md").is_file()
