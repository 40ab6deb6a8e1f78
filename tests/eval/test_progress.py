"""Progress on stderr: per-item counts with rate and ETA, a summary table, and silence."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from spade.eval._progress import Progress, eta_text, rate_text

from spade.cli import main


def test_rates_read_well_when_slow_and_fast() -> None:
    assert rate_text(None) == "-- it/s"
    assert rate_text(0.05) == "20.0 s/it"  # a real model on a CPU: never "0.0/s"
    assert rate_text(12.34) == "12.3 it/s"
    assert eta_text(90, 1.0) == "0:01:30"
    assert eta_text(5, None) == "-:--:--"


def test_plain_lines_count_every_item() -> None:
    out = io.StringIO()
    p = Progress(stream=out, line_every_s=0.0)
    p.begin(["s"])
    p.start("s", 3, 1)
    for _ in range(2):
        p.advance(1)
    p.finish("[s] done")
    p.end()
    lines = out.getvalue().splitlines()
    assert "[s] resuming: 1/3 samples already done" in lines
    assert any(line.startswith("[s] 2/3 samples") and "ETA" in line for line in lines)
    assert any(line.startswith("[s] 3/3 samples") for line in lines)


def test_quiet_is_silent_even_for_library_chatter() -> None:
    out = io.StringIO()
    p = Progress(stream=out, quiet=True)
    p.begin(["s"])
    with p.loading("s"):
        print("....", end="")
        print("generator says hi", file=sys.stderr)
    p.start("s", 2, 0)
    p.advance(2)
    p.finish("[s] done")
    p.summary({"s": {"status": "ok", "score": 0.5, "stderr": 0.1, "n_items": 2}}, "quick")
    p.end()
    assert out.getvalue() == ""


def test_loading_drops_dots_but_keeps_messages() -> None:
    out = io.StringIO()
    p = Progress(stream=out)
    with p.loading("rg"):
        print("." * 50)
        print("warning: dataset x is slow")
    text = out.getvalue()
    assert "warning: dataset x is slow" in text and "....." not in text


def test_eval_run_shows_counts_and_a_summary_table(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "aime").mkdir(parents=True)
    (data / "aime" / "aime24.jsonl").write_text(
        "".join(json.dumps({"id": i, "problem": "p", "answer": str(i)}) + "\n" for i in range(2)))
    args = ["eval", "run", "--model", "oracle", "--suites", "aime24", "--samples", "3",
            "--data-dir", str(data), "--out", str(tmp_path / "o")]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "[aime24] 6/6 samples" in err and "evaluation summary (preset: paper)" in err
    assert main([*args[:2], "--quiet", *args[2:-1], str(tmp_path / "q")]) == 0
    assert capsys.readouterr().err == ""
