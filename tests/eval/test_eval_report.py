"""`spade report`: tables from nested run directories, reference rows, formats, chart."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from _runfactory import write_run
from spade.eval._runs import load_run
from spade.eval.report import build_report, infer_kind, load_references, to_markdown
from spade.eval.report._reference import default_reference_dir

from spade.cli import main

CATS = ("Math", "Algorithmic", "Cognition", "Logic")


def _items(prefix: str, n: int, n_right: int, k: int = 4) -> dict[str, list[float]]:
    return {f"{prefix}{i}": [1.0 if i < n_right else 0.0] * k for i in range(n)}


def _rg(n_right_per_cat: dict[str, int]) -> tuple[dict[str, list[float]], dict[str, str]]:
    items, cats = {}, {}
    for cat in CATS:
        for i in range(4):
            items[f"{cat}-{i}"] = [1.0 if i < n_right_per_cat.get(cat, 0) else 0.0]
            cats[f"{cat}-{i}"] = cat
    return items, cats


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    rg_base, cats = _rg({"Math": 1, "Algorithmic": 2})
    rg_spade, _ = _rg({"Math": 3, "Algorithmic": 4, "Cognition": 2, "Logic": 1})
    out = [
        write_run(
            tmp_path,
            "base-run",
            {
                "aime24": _items("a", 10, 2),
                "gpqa_diamond": _items("g", 10, 5),
                "reasoning_gym": rg_base,
            },
            method="base",
            categories={"reasoning_gym": cats},
        ),
        write_run(
            tmp_path,
            "rlve-run",
            {
                "aime24": _items("a", 10, 3),
                "gpqa_diamond": _items("g", 10, 6),
                "reasoning_gym": rg_base,
            },
            method="rlve",
            categories={"reasoning_gym": cats},
        ),
        write_run(
            tmp_path,
            "static-run",
            {"aime24": _items("a", 10, 2)},
            method="static-pool",
            extra_suites={
                "gpqa_diamond": {"status": "missing", "missing_file": "gpqa_diamond/test.jsonl"},
                "reasoning_gym": {"status": "missing", "missing_file": "hard_split_params.yaml"},
            },
        ),
    ]
    for seed, right in ((0, 5), (1, 7)):
        out.append(
            write_run(
                tmp_path,
                f"spade-s{seed}",
                {
                    "aime24": _items("a", 10, right),
                    "gpqa_diamond": _items("g", 10, 7),
                    "reasoning_gym": rg_spade,
                },
                method="spade",
                seed=seed,
                categories={"reasoning_gym": cats},
            )
        )
    return out


def _md(runs: list[Path], *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["report", *map(str, runs), *extra])
    return rc, capsys.readouterr().out


def _row(md: str, name: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_markdown_rows_per_method_with_real_numbers(runs, capsys):
    rc, md = _md(runs, capsys=capsys)
    assert rc == 0
    header = _row(md, "Method")
    assert header[:8] == [
        "Method",
        "Kind",
        "AIME 24",
        "GPQA-D",
        "RG Math",
        "RG Algorithmic",
        "RG Cognition",
        "RG Logic",
    ]
    base = _row(md, "base")
    assert base[2].startswith("20.0 ± ") and base[3].startswith("50.0")
    assert base[4].startswith("25.0") and base[5].startswith("50.0")
    base_avg = (20 + 50 + 25 + 50 + 0 + 0) / 6  # Avg = mean of the 6 columns
    assert base[8].startswith(f"{base_avg:.1f} ± ") and base[9] == "—"
    # Two spade seeds pooled into ONE row; AIME mean of 50 and 70.
    assert "spade (2 runs)" in md and "| spade |" not in md
    spade = _row(md, "spade (2 runs)")
    assert spade[2].startswith("60.0 ± ")
    spade_avg = (60 + 70 + 75 + 100 + 50 + 25) / 6
    assert spade[8].startswith(f"{spade_avg:.1f}")
    assert spade[9] == f"+{spade_avg - base_avg:.1f}"
    # Strongest fixed-env baseline is rlve (static-pool has no complete Avg).
    rlve_avg = (30 + 60 + 25 + 50 + 0 + 0) / 6
    assert spade[10] == f"+{spade_avg - rlve_avg:.1f}"
    assert "against 'rlve', the fixed-environment baseline with the highest Avg" in md


def test_missing_suites_say_missing_not_zero(runs, capsys):
    _, md = _md(runs, capsys=capsys)
    static = _row(md, "static-pool")
    assert static[1] == "fixed env"
    assert static[3] == "missing" and static[4:8] == ["missing"] * 4
    assert static[8] == "n/a"
    assert "missing: the run has no result" in md


def test_reference_rows_reproduce_the_reported_gains(runs, capsys):
    _, md = _md(runs, capsys=capsys)
    paper = _row(md, "SPADE 30B-A3B (paper)")
    assert paper[2:8] == [""] * 6  # no per-benchmark numbers are invented
    assert paper[8:] == ["58.3", "+8.1", "+5.3"]
    assert _row(md, "Qwen3-30B-A3B base (paper) [derived]")[8] == "50.2"
    assert _row(md, "Best fixed-env baseline (paper) [derived]")[8] == "53.0"
    assert "not the paper's 8 held-out benchmarks" in md
    # No run touches tool use, so that table is not rendered.
    assert "Tool-use" not in md


def test_reference_files_hold_exactly_the_seed_numbers():
    tables = {t.path.name: t for t in load_references(None)}
    assert set(tables) == {"paper_games.json", "paper_tool_use.json"}
    games = {
        r.method: (r.kind, dict(r.averages), dict(r.scores))
        for r in tables["paper_games.json"].rows
    }
    assert games == {
        "Qwen3-30B-A3B base (paper)": ("base", {"games": pytest.approx(0.502)}, {}),
        "Best fixed-env baseline (paper)": ("fixed_env", {"games": pytest.approx(0.530)}, {}),
        "SPADE 30B-A3B (paper)": ("spade", {"games": pytest.approx(0.583)}, {}),
    }
    tool = {r.kind: dict(r.scores) for r in tables["paper_tool_use.json"].rows}
    assert tool["base"] == pytest.approx(
        {"bfcl_v4/multi_turn": 0.49, "tau2": 0.49, "acebench/agent": 0.62}
    )
    assert tool["spade"] == pytest.approx(
        {"bfcl_v4/multi_turn": 0.547, "tau2": 0.526, "acebench/agent": 0.759}
    )
    assert all("2608.19197" in t.source for t in tables.values())
    assert default_reference_dir().is_dir()


def test_tool_use_table_blanks_unreported_columns(tmp_path, capsys):
    run = write_run(
        tmp_path,
        "tools",
        {"tau2": _items("t", 6, 3), "bfcl_v4": _items("b", 6, 2)},
        method="base",
        categories={"bfcl_v4": {f"b{i}": ("live", "multi_turn")[i % 2] for i in range(6)}},
    )
    rc, md = _md([run], capsys=capsys)
    assert rc == 0 and "### Tool-use benchmarks" in md
    header = _row(md, "Method")
    assert header[2:7] == [
        "BFCL v4 non-live", "BFCL v4 live", "BFCL v4 multi-turn", "tau2-bench pass^1",
        "ACEBench agent"
    ]
    base = _row(md, "Base (paper, tool use)")
    assert base[2:7] == ["", "", "49.0", "49.0", "62.0"] and base[7] == ""
    ours = _row(md, "base")
    # no non-live categories were run: n/a, never a number from the live ones
    assert ours[2] == "n/a" and ours[6] == "missing" and ours[7] == "n/a"


def test_non_comparable_results_are_daggered(tmp_path, capsys):
    run = write_run(tmp_path, "lim", {"aime24": _items("a", 4, 1)}, method="base", comparable=False)
    _, md = _md([run], "--no-reference", capsys=capsys)
    assert _row(md, "base")[2].endswith("†")
    assert "† not comparable with the paper protocol" in md


def test_baseline_option_and_errors(runs, capsys):
    rc, md = _md(runs, "--baseline", "rlve", "--no-reference", capsys=capsys)
    assert rc == 0
    assert _row(md, "rlve")[9] == "—" and "Δ base (our runs): against 'rlve'" in md
    rc = main(["report", *map(str, runs), "--baseline", "nope"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "matches no row" in err


def test_several_base_rows_need_a_choice(tmp_path, capsys):
    a = write_run(tmp_path, "a", {"aime24": _items("a", 4, 1)}, method="base-4b")
    b = write_run(tmp_path, "b", {"aime24": _items("a", 4, 2)}, method="base-8b")
    assert main(["report", str(a), str(b)]) == 2
    assert "--baseline" in capsys.readouterr().err
    assert main(["report", str(a), str(b), "--baseline", "base-8b"]) == 0


def test_per_run_and_kind_override(runs, capsys):
    rc, md = _md(runs, "--per-run", "--kind", "spade=ablation", "--no-reference", capsys=capsys)
    assert rc == 0
    assert _row(md, "spade [spade-s0]")[1] == "ablation"
    assert _row(md, "spade [spade-s1]")[2].startswith("70.0")


def test_method_kind_from_results_json(tmp_path):
    run = write_run(
        tmp_path, "x", {"aime24": _items("a", 4, 1)}, method="Qwen3-8B", top={"method_kind": "base"}
    )
    report = build_report([load_run(run)])
    assert report.tables[0].rows[0].row.kind == "base"


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("base", "base"),
        ("Base model", "base"),
        ("baseline-rlve", "fixed_env"),
        ("RLVE sliding window", "fixed_env"),
        ("static-pool", "fixed_env"),
        ("fixed-env", "fixed_env"),
        ("SPADE", "spade"),
        ("spade-30b", "spade"),
        ("spade-no-corpus", "ablation"),
        ("SPADE w/o memory", "ablation"),
        ("spade-frozen-designer", "ablation"),
        ("ablation: solve-rate", "ablation"),
        ("SmolLM2-135M", "other"),
        ("basement", "other"),
    ],
)
def test_infer_kind(label, kind):
    assert infer_kind(label) == kind


def test_latex_is_booktabs_with_consistent_columns(runs, capsys):
    rc, tex = _md(runs, "--format", "latex", capsys=capsys)
    assert rc == 0
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{llrrrrrrrrr}"):
        assert cmd in tex
    body = tex.split(r"\toprule")[1].split(r"\bottomrule")[0]
    rows = [x for x in body.splitlines() if x.endswith(r"\\") and "multicolumn" not in x]
    assert rows and all(x.count(" & ") == 10 for x in rows)
    assert r"$\pm$" in tex and r"$\Delta$ base" in tex and "58.3 & +8.1 & +5.3" in tex


def test_csv_long_format_round_trips(runs, tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert main(["report", *map(str, runs), "--format", "csv", "--out", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    get = {(r["method"], r["column"]): r for r in rows}
    assert float(get[("base", "aime24")]["value_pct"]) == pytest.approx(20.0)
    assert get[("static-pool", "gpqa_diamond")]["state"] == "missing"
    assert get[("static-pool", "gpqa_diamond")]["value_pct"] == ""
    assert float(get[("SPADE 30B-A3B (paper)", "delta_base")]["value_pct"]) == pytest.approx(8.1)
    assert get[("spade", "aime24")]["runs"] == "2"


def test_plot_writes_png_without_pyplot(runs, tmp_path, capsys):
    png = tmp_path / "chart.png"
    pyplot_before = "matplotlib.pyplot" in sys.modules
    assert main(["report", *map(str, runs), "--plot", str(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert pyplot_before or "matplotlib.pyplot" not in sys.modules


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p.mkdir(), "not an evaluation run"),
        (lambda p: None, "no such run directory"),
        (lambda p: (p.mkdir(), (p / "results.json").write_text("{")), "unreadable"),
        (
            lambda p: (
                p.mkdir(),
                (p / "results.json").write_text(json.dumps({"schema_version": 2, "suites": {}})),
            ),
            "schema_version 2",
        ),
    ],
)
def test_bad_run_dirs_give_one_line(tmp_path, capsys, setup, message):
    path = tmp_path / "run"
    setup(path)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_reference_file(tmp_path, runs, capsys):
    ref = tmp_path / "ref.json"
    ref.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "source": "x",
                "rows": [{"method": "m", "method_kind": "base", "averages": {"games": 150}}],
            }
        )
    )
    assert main(["report", str(runs[0]), "--reference", str(ref)]) == 2
    assert "percentage" in capsys.readouterr().err


def test_markdown_function_matches_cli(runs, capsys):
    _, md = _md(runs, capsys=capsys)
    report = build_report([load_run(p) for p in runs], load_references(None))
    assert to_markdown(report) == md


def test_reference_only_report(capsys):
    assert main(["report"]) == 2  # a forgotten RUN_DIR is an error, not an empty table
    assert "no RUN_DIR" in capsys.readouterr().err
    assert main(["report", "--reference-only"]) == 0
    md = capsys.readouterr().out
    assert "### Tool-use benchmarks" in md and "Avg of our runs" not in md
    assert _row(md, "SPADE (paper, tool use)")[2:5] == ["54.7", "52.6", "75.9"]
    assert main(["report", "--reference-only", "--no-reference"]) == 2


def test_reference_numbers_the_source_does_not_state_are_labelled_derived(
    tmp_path: Path,
) -> None:
    from spade.eval._runs import RunError
    from spade.eval.report import build_report, load_references, to_markdown

    refs = load_references(None)
    games = next(t for t in refs if "games" in t.title)
    by_kind = {r.kind: r for r in games.rows}
    assert by_kind["spade"].derived == {} and by_kind["spade"].averages["games"] == 0.583
    assert "58.3 - 8.1" in by_kind["base"].derived["games"]
    assert "58.3 - 5.3" in by_kind["fixed_env"].derived["games"]
    assert "(reported)" not in games.title
    md = to_markdown(build_report([], [games]))
    assert "Qwen3-30B-A3B base (paper) [derived]" in md
    assert "SPADE 30B-A3B (paper) |" in md  # the stated number is not marked
    assert "Derived, not reported" in md and "58.3 - 5.3" in md
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1, "source": "s", "rows": [
        {"method": "m", "method_kind": "base", "averages": {"games": 50.0},
         "derived": {"tool_use": "x - y"}}]}))
    with pytest.raises(RunError, match="derived"):
        load_references([bad])
