"""Report and gate on run directories written by the real `spade eval run`.

The oracle provider answers every item correctly; replay files built from the oracle's own
completions, with chosen items replaced by a non-answer, stand in for weaker models. The
expected numbers follow from which items were spoiled, and every table cell is checked
against the nested results.json it came from (the renderer this replaces printed nothing
on real files because of a key mismatch).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from spade.cli import main

pytestmark = pytest.mark.needs("benchmark_data")

LIMIT = 12
SUITES = "aime24,gpqa_diamond"


def _eval(out: Path, model: str, label: str, suites: str = SUITES, limit: int = LIMIT) -> Path:
    args = ["eval", "run", "--model", model, "--suites", suites, "--limit", str(limit)]
    args += ["--samples", "2", "--label", label, "--out", str(out), "--quiet"]
    assert main(args) == 0
    return out


def _replay(oracle: Path, dest: Path, n_right: dict[str, int]) -> Path:
    """Replay file: the oracle's completions for the first n_right items, junk after."""
    with dest.open("w") as fh:
        for suite, keep in n_right.items():
            order: list[str] = []
            for line in (oracle / "samples" / f"{suite}.jsonl").read_text().splitlines():
                rec = json.loads(line)
                if rec["id"] not in order:
                    order.append(rec["id"])
                right = order.index(rec["id"]) < keep
                text = rec["completion"] if right else "I cannot solve this."
                fh.write(
                    json.dumps(
                        {
                            "suite": suite,
                            "id": rec["id"],
                            "sample": rec["sample"],
                            "completion": text,
                        }
                    )
                    + "\n"
                )
    return dest


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    oracle = _eval(root / "spade-a", "oracle", "spade-oracle")
    runs = {
        "spade-a": oracle,
        "spade-b": _eval(root / "spade-b", "oracle", "spade-oracle"),
        "base": _eval(
            root / "base",
            f"replay:{_replay(oracle, root / 'base.jsonl', {'aime24': 2, 'gpqa_diamond': 8})}",
            "base",
        ),
        "rlve": _eval(
            root / "rlve",
            f"replay:{_replay(oracle, root / 'rlve.jsonl', {'aime24': 6, 'gpqa_diamond': 10})}",
            "rlve",
        ),
    }
    return runs


def _row(md: str, name: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_report_on_real_runs(real_runs, capsys):
    paths = [str(p) for p in real_runs.values()]
    assert main(["report", *paths]) == 0
    md = capsys.readouterr().out
    base, rlve = _row(md, "base"), _row(md, "rlve")
    spade = _row(md, "spade-oracle (2 runs)")
    assert base[1] == "base"
    assert base[2].startswith("16.7 ± ") and base[3].startswith("66.7 ± ")
    assert base[2].endswith("†")  # --limit slice: not comparable with the paper
    assert rlve[1] == "fixed env" and rlve[2].startswith("50.0") and rlve[3].startswith("83.3")
    assert spade[1] == "SPADE" and spade[2:5] == ["100.0 ± 0.0†"] * 3
    assert base[4].startswith("41.7") and rlve[4].startswith("66.7")
    assert spade[5:] == ["+58.3†", "+33.3†"]
    assert "58.3 | +8.1 | +5.3" in md  # the paper's rows ride along


def test_csv_cells_equal_the_nested_results(real_runs, capsys):
    assert (
        main(
            [
                "report",
                *map(str, real_runs.values()),
                "--per-run",
                "--format",
                "csv",
                "--no-reference",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for name, path in real_runs.items():
        doc = json.loads((path / "results.json").read_text())
        for suite, entry in doc["suites"].items():
            (row,) = [r for r in rows if r["column"] == suite and f"[{name}]" in r["method"]]
            assert float(row["value_pct"]) == pytest.approx(100 * entry["score"], abs=1e-3)
            assert float(row["ci95_halfwidth_pct"]) == pytest.approx(
                100 * 1.96 * entry["stderr"], abs=1e-2
            )
            assert row["comparable"] == str(entry["comparable"]).lower()


def test_plot_from_real_runs(real_runs, tmp_path):
    png = tmp_path / "real.png"
    assert (
        main(
            [
                "report",
                *map(str, real_runs.values()),
                "--plot",
                str(png),
                "--out",
                str(tmp_path / "t.md"),
            ]
        )
        == 0
    )
    assert png.read_bytes()[:4] == b"\x89PNG" and "AIME 24" in (tmp_path / "t.md").read_text()


def test_gate_on_real_runs(real_runs, capsys):
    ref = str(real_runs["spade-a"])
    assert main(["regress", "--reference", ref, "--candidate", str(real_runs["spade-b"])]) == 0
    assert "PASS" in capsys.readouterr().out
    assert (
        main(["regress", "--reference", ref, "--candidate", str(real_runs["base"]), "--json"]) == 1
    )
    doc = json.loads(capsys.readouterr().out)
    verdicts = {s["suite"]: s for s in doc["suites"]}
    assert verdicts["aime24"]["verdict"] == "worse"
    assert verdicts["aime24"]["delta"] == pytest.approx(-10 / 12)
    assert verdicts["aime24"]["n_paired"] == LIMIT
    # 4 spoiled GPQA items cannot reach significance: exact one-sided p = 1 / 2^4.
    assert verdicts["gpqa_diamond"]["p_value"] == pytest.approx(0.0625)
    assert verdicts["gpqa_diamond"]["verdict"] == "no significant change"


@pytest.mark.slow
def test_reasoning_gym_categories_from_a_real_run(tmp_path, capsys):
    oracle = _eval(tmp_path / "rg-oracle", "oracle", "spade", suites="reasoning_gym", limit=1)
    replay = _replay(oracle, tmp_path / "rg.jsonl", {"reasoning_gym": 50})
    base = _eval(tmp_path / "rg-base", f"replay:{replay}", "base", suites="reasoning_gym", limit=1)
    assert main(["report", str(base), str(oracle), "--no-reference"]) == 0
    md = capsys.readouterr().out
    header = _row(md, "Method")
    assert header[2:6] == ["RG Math", "RG Algorithmic", "RG Cognition", "RG Logic"]
    cats = json.loads((base / "results.json").read_text())["suites"]["reasoning_gym"]["categories"]
    row = _row(md, "base")
    for i, cat in enumerate(("Math", "Algorithmic", "Cognition", "Logic")):
        assert row[2 + i].startswith(f"{100 * cats[cat]['score']:.1f}")
    assert _row(md, "spade")[2:7] == ["100.0 ± 0.0†"] * 5
