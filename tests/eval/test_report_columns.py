"""Report Avg with an extra suite in one run, and the plot's missing-versus-0% marks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _runfactory import write_run
from spade.eval._runs import load_run
from spade.eval.report import build_report

from spade.cli import main


def _items(n: int, right: int) -> dict[str, list[float]]:
    return {f"i{k}": [1.0 if k < right else 0.0] for k in range(n)}


def _row(md: str, name: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_an_extra_suite_in_one_run_keeps_every_avg(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    base = write_run(tmp_path, "base", {"aime24": _items(10, 2), "gpqa_diamond": _items(10, 4)},
                     method="base")
    spade = write_run(tmp_path, "spade",
                      {"aime24": _items(10, 6), "gpqa_diamond": _items(10, 8),
                       "aime25": _items(10, 9)}, method="spade")
    assert main(["report", "--no-reference", str(base), str(spade)]) == 0
    md = capsys.readouterr().out
    header = _row(md, "Method")
    avg = header.index("Avg")
    assert _row(md, "base")[avg].startswith("30.0")  # (20 + 40) / 2, aime25 left out
    assert _row(md, "spade")[avg].startswith("70.0")  # (60 + 80) / 2, not (60 + 80 + 90) / 3
    assert _row(md, "spade")[avg + 1] == "+40.0"
    assert "left out (not evaluated by every run): AIME 25" in md


def test_a_suite_a_run_could_not_score_still_blanks_that_rows_avg(tmp_path: Path) -> None:
    ok = write_run(tmp_path, "a", {"aime24": _items(4, 1), "gpqa_diamond": _items(4, 2)})
    gone = write_run(tmp_path, "b", {"aime24": _items(4, 3)}, extra_suites={
        "gpqa_diamond": {"status": "missing", "missing_file": "gpqa/gpqa_diamond.csv"}})
    report = build_report([load_run(ok), load_run(gone)])
    (table,) = report.tables
    averages = {tr.row.method: tr.average for tr in table.rows}
    assert averages["a"].value == pytest.approx(0.375)
    assert averages["b"].value is None and averages["b"].state == "n/a"


def test_plot_labels_missing_and_zero_differently(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    texts: list[str] = []
    original = Axes.text

    def spy(self: Axes, x: float, y: float, s: str, *args: object, **kwargs: object) -> object:
        texts.append(s)
        return original(self, x, y, s, *args, **kwargs)

    monkeypatch.setattr(Axes, "text", spy)
    zero = write_run(tmp_path, "zero", {"aime24": _items(4, 0), "gpqa_diamond": _items(4, 2)})
    gone = write_run(tmp_path, "gone", {"aime24": _items(4, 2)}, extra_suites={
        "gpqa_diamond": {"status": "missing", "missing_file": "gpqa/gpqa_diamond.csv"}})
    png = tmp_path / "chart.png"
    assert main(["report", "--no-reference", str(zero), str(gone), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert texts.count("missing") == 1  # gone's GPQA
    assert "n/a" in texts  # gone's Avg
    assert texts.count("0") == 1  # zero's AIME 24: a real 0%, labelled as such


def test_report_names_the_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quick = write_run(tmp_path, "q", {"aime24": _items(4, 1)}, top={"preset": "quick"})
    paper = write_run(tmp_path, "p", {"aime24": _items(4, 1)}, top={"preset": "paper"})
    assert main(["report", "--no-reference", str(quick)]) == 0
    assert "Preset: quick (all runs)." in capsys.readouterr().out
    assert main(["report", "--no-reference", str(quick), str(paper)]) == 0
    assert "Presets: paper: p; quick: q." in capsys.readouterr().out
