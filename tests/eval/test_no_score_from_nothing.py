"""A suite with no scored sample is ``missing`` with its reason: in results, reports, gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results
from _runfactory import write_run
from spade.eval._runs import load_run
from spade.eval.regress import GateConfig, compare_runs
from spade.eval.report import build_report, to_markdown


def _aime_data(tmp_path: Path, text: str | None) -> Path:
    """A data directory with aime24 (real) and aime25 holding ``text`` (absent when None)."""
    data = tmp_path / "data"
    (data / "aime").mkdir(parents=True)
    shutil.copy(data_dir() / "aime" / "aime24.jsonl", data / "aime" / "aime24.jsonl")
    if text is not None:
        (data / "aime" / "aime25.jsonl").write_text(text)
    return data


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty file"),
        ("\n  \n", "empty file"),
        ('{"id": "I-1", "problem": "What is', "aime25.jsonl:1 is not JSON"),  # cut short
        ('{"id": "I-1", "answer": 3}', "line 1: not an AIME record"),  # no problem
        ("\0\0\0", "aime25.jsonl:1 is binary"),
    ],
)
def test_an_empty_or_cut_data_file_is_missing_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    data = _aime_data(tmp_path, text)
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "aime24,aime25", "--samples", "1",
               "--out", str(out), "--data-dir", str(data)) == 2
    err = capsys.readouterr().err
    assert "aime25" in err and "aime25.jsonl" in err
    doc = results(out)
    assert doc["suites"]["aime24"]["status"] == "ok"
    e = doc["suites"]["aime25"]
    assert e["status"] == "missing" and "score" not in e
    assert e["missing_file"].endswith("aime/aime25.jsonl") and reason in e["missing_reason"]
    run = load_run(out)
    assert not run.suites["aime25"].has_score and reason in run.suites["aime25"].why_missing


def test_a_run_stopped_before_its_first_sample_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = tmp_path / "replay.jsonl"  # answers nothing: the provider stops the run
    replay.write_text(json.dumps({"suite": "aime24", "id": "nope", "sample": 0,
                                  "completion": "x"}) + "\n")
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--suites", "aime24", "--samples", "1",
               "--limit", "2", "--out", str(out), "--data-dir", str(data_dir())) == 2
    capsys.readouterr()
    e = results(out)["suites"]["aime24"]
    assert e["status"] == "missing" and "score" not in e
    assert e["missing_reason"] == "interrupted before its first scored sample"


def _old_partial(tmp_path: Path) -> Path:
    """A run written by a harness that recorded an interrupted suite as 0.0 over nothing."""
    return write_run(
        tmp_path, "old", {"aime24": {"1": [1.0], "2": [0.0]}},
        extra_suites={"gpqa_diamond": {"status": "partial", "score": 0.0, "stderr": 0.0,
                                       "ci95": [0.0, 0.0], "n_items": 0, "n_samples": 1,
                                       "metric": "avg@1", "comparable": False}},
    )


def test_an_old_score_over_nothing_reads_as_missing_in_reports_and_gate(tmp_path: Path) -> None:
    run = load_run(_old_partial(tmp_path))
    gpqa = run.suites["gpqa_diamond"]
    assert gpqa.status == "missing" and gpqa.score is None and not gpqa.has_score
    assert "no scored sample" in gpqa.why_missing
    md = to_markdown(build_report([run]))
    lines = [x for x in md.splitlines() if x.startswith("|")]
    head = [c.strip() for c in lines[0].split("|")]
    row = [c.strip() for c in next(x for x in lines if x.startswith("| old")).split("|")]
    assert row[next(i for i, c in enumerate(head) if c.startswith("GPQA"))] == "missing"
    assert "Missing in old: gpqa_diamond (no scored sample" in md
    ref = write_run(tmp_path, "ref", {"aime24": {"1": [1.0], "2": [0.0]},
                                      "gpqa_diamond": {"a": [1.0], "b": [1.0]}})
    result = compare_runs(load_run(ref), run, GateConfig())
    verdicts = {c.suite: c for c in result.comparisons}
    assert verdicts["gpqa_diamond"].verdict == "missing" and not result.passed
    assert "no scored sample" in verdicts["gpqa_diamond"].notes[0]
