"""`spade report`: the tool-use table (BFCL v4, tau2-bench, ACEBench) with the paper's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _runfactory import write_run
from spade.eval.regress._passk import suite_pass_k

from spade.cli import main


def _items(prefix: str, n: int, n_right: int, k: int = 1) -> dict[str, list[float]]:
    return {f"{prefix}{i}": [1.0 if i < n_right else 0.0] * k for i in range(n)}


def _tool_run(
    root: Path, name: str, *, method: str, user: Any = None, agent: bool = True, right: int = 2
) -> Path:
    bfcl = _items("b", 12, right)
    bfcl_cats = {
        f"b{i}": ("simple_python", "live_simple", "multi_turn_base")[i % 3] for i in range(12)
    }
    tau = _items("t", 9, right, k=4)
    tau_cats = {f"t{i}": ("retail", "airline", "telecom")[i % 3] for i in range(9)}
    ace = _items("a", 9, right)
    ace_cats = {
        f"a{i}": ("normal_atom_bool", "special_incomplete", "agent_multi_step")[i % 3]
        for i in range(9)
    }
    out = write_run(
        root,
        name,
        {"bfcl_v4": bfcl, "tau2": tau, "acebench": ace},
        method=method,
    )
    doc = json.loads((out / "results.json").read_text())
    suites = doc["suites"]
    # BFCL as its suite writes it: fine categories as {"accuracy", "n"}, the groups beside
    # them (None where a member category was not run), web_search/memory unavailable
    fine = {c: [bfcl[i][0] for i in bfcl if bfcl_cats[i] == c] for c in set(bfcl_cats.values())}
    suites["bfcl_v4"]["categories"] = {
        c: {"accuracy": sum(v) / len(v), "n": len(v)} for c, v in fine.items()
    }
    suites["bfcl_v4"]["groups"] = {
        "overall": 0.1 * sum(fine["simple_python"]) / 4 + 0.1 * sum(fine["live_simple"]) / 4
        + 0.3 * sum(fine["multi_turn_base"]) / 4,
        "non_live": sum(fine["simple_python"]) / 4,
        "live": sum(fine["live_simple"]) / 4,
        "multi_turn": sum(fine["multi_turn_base"]) / 4,
        "irrelevance": None,
        "relevance": None,
    }
    suites["bfcl_v4"]["unavailable"] = {"web_search": "internet", "memory": "hub model"}
    suites["bfcl_v4"]["leaderboard"] = {"implementation": "bfcl-eval generate_leaderboard_csv"}
    # "irrelevance" names a fine category AND a group: the column is the group
    suites["bfcl_v4"]["categories"]["irrelevance"] = {"accuracy": 1.0, "n": 1}
    # tau2 as its suite writes it: pass^k overall and per domain (keys "1".."4")
    per_domain = {}
    for d in ("retail", "airline", "telecom"):
        tasks = {t: v for t, v in tau.items() if tau_cats[t] == d}
        per_domain[d] = {
            "pass_k": {str(k): suite_pass_k(tasks, k) for k in range(1, 5)},
            "n_tasks": len(tasks),
        }
    suites["tau2"]["pass_k"] = {str(k): suite_pass_k(tau, k) for k in range(1, 5)}
    suites["tau2"]["per_domain"] = per_domain
    # ACEBench as its suite writes it: fine categories as bare accuracies, the three parts
    # and the summary beside them, the user simulator's identity in the entry
    acc = {c: sum(ace[i][0] for i in ace if ace_cats[i] == c) / 3 for c in set(ace_cats.values())}
    parts = {
        "normal": acc["normal_atom_bool"],
        "special": acc["special_incomplete"],
        "agent": acc["agent_multi_step"] if agent else None,
    }
    summary = None
    if agent:
        summary = 0.578 * parts["normal"] + 0.2676 * parts["special"] + 0.1545 * parts["agent"]
    suites["acebench"].update(
        categories=acc,
        **parts,
        summary=summary,
        user_model={"spec": user, "name": "u"} if user else None,
    )
    if not agent:
        suites["acebench"]["notes"] = {"unavailable": {"agent_multi_turn": "needs a user"}}
    if user is not None:
        suites["tau2"]["user_model"] = {"spec": user, "name": "u"}
        for s in ("tau2", "acebench"):
            suites[s]["protocol"]["user_sampling"] = {"temperature": 0.0, "top_p": 1.0}
    (out / "results.json").write_text(json.dumps(doc))
    return out


def ours_irrelevance_is_na(row: dict[str, str]) -> bool:
    """Groups whose member categories were not run are n/a, not unavailable, not 0."""
    return row["BFCL v4 irrelevance"] == "n/a" == row["BFCL v4 relevance"]


def _md(paths: list[Path], *extra: str, capsys: Any) -> str:
    assert main(["report", *map(str, paths), *extra]) == 0
    return capsys.readouterr().out


def _table(md: str) -> dict[str, dict[str, str]]:
    start = md.index("### Tool-use benchmarks")
    lines = [ln for ln in md[start:].splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0]] = dict(zip(head, cells, strict=False))
    return rows


COLUMNS = [
    "BFCL v4 Overall Acc",
    "BFCL v4 non-live",
    "BFCL v4 live",
    "BFCL v4 multi-turn",
    "BFCL v4 irrelevance",
    "BFCL v4 relevance",
    "tau2-bench pass^1",
    "tau2-bench retail",
    "tau2-bench airline",
    "tau2-bench telecom",
    "ACEBench summary",
    "ACEBench normal",
    "ACEBench special",
    "ACEBench agent",
]


def test_tool_use_columns_reference_rows_and_average(tmp_path: Path, capsys):
    run = _tool_run(
        tmp_path,
        "base-tools",
        method="base",
        user="openai:http://127.0.0.1:9#gpt-4.1",
    )
    md = _md([run], capsys=capsys)
    rows = _table(md)
    head = list(rows["base"])
    assert head[2 : 2 + len(COLUMNS)] == COLUMNS  # subcategories such as simple_python not shown
    assert ours_irrelevance_is_na(rows["base"])
    ours = rows["base"]
    # 12 BFCL items, items 0 and 1 right: non_live gets b0, live gets b1
    assert ours["BFCL v4 non-live"].startswith("25.0") and ours["BFCL v4 multi-turn"].startswith(
        "0.0"
    )
    assert ours["tau2-bench pass^1"].startswith("22.2") and ours["tau2-bench retail"].startswith(
        "33.3"
    )
    # a0 and a1 right: normal_atom_bool gets a0, special_incomplete a1, agent none
    summary = 0.578 * (1 / 3) + 0.2676 * (1 / 3) + 0.1545 * 0.0
    assert ours["ACEBench summary"].startswith(f"{100 * summary:.1f}")
    assert ours["ACEBench normal"] == "33.3" and ours["ACEBench agent"] == "0.0"
    avg = (0.0 + 2 / 9 + 0.0) / 3  # BFCL multi-turn, tau2 pass^1, ACEBench agent
    assert ours["Avg"].startswith(f"{100 * avg:.1f}")
    paper_base = rows["Base (paper, tool use)"]
    assert paper_base["BFCL v4 multi-turn"] == "49.0" and paper_base["tau2-bench pass^1"] == "49.0"
    assert paper_base["ACEBench agent"] == "62.0"
    assert paper_base["BFCL v4 live"] == "" and paper_base["ACEBench summary"] == ""
    assert paper_base["BFCL v4 Overall Acc"] == ""  # the paper reports multi-turn only
    assert ours["BFCL v4 Overall Acc"].startswith(f"{100 * (0.1 * 0.25 + 0.1 * 0.25):.1f}")
    assert "40% agentic" in md and "at most 60%" in md
    assert paper_base["Avg"] == ""  # the paper reports no tool-use average
    assert rows["SPADE (paper, tool use)"]["ACEBench agent"] == "75.9"
    assert "0.578 normal + 0.2676 special + 0.1545 agent" in md
    assert (
        "tau2-bench user simulator: openai:http://127.0.0.1:9#gpt-4.1 (temperature=0.0, top_p=1.0)"
        in md
    )


def test_unavailable_parts_are_not_zero_and_user_models_are_not_mixed(tmp_path: Path, capsys):
    a = _tool_run(tmp_path, "s0", method="spade", user="openai:http://127.0.0.1:9#gpt-4.1")
    b = _tool_run(tmp_path, "s1", method="spade", user="hf:/models/user-sim", right=3)
    c = _tool_run(tmp_path, "nouser", method="base", agent=False)
    md = _md([a, b, c], "--no-reference", capsys=capsys)
    rows = _table(md)
    assert rows["base"]["ACEBench agent"] == "unavailable" and rows["base"]["Avg"] == "n/a"
    assert rows["base"]["ACEBench summary"] == "unavailable"
    assert "unavailable: the part needs what the run did not have" in md
    assert rows["spade (2 runs)"]["ACEBench agent"] != "unavailable"
    assert "WARNING: row 'spade' pools tau2 runs made with different user simulators" in md
    assert "ACEBench user simulator: none (parts needing one are unavailable) (run nouser)" in md


@pytest.mark.parametrize("fmt", ["csv", "latex"])
def test_other_formats_carry_the_tool_use_columns(tmp_path: Path, capsys, fmt: str):
    run = _tool_run(tmp_path, "base-tools", method="base", agent=False)
    text = _md([run], "--format", fmt, capsys=capsys)
    head = "tau2-bench pass^1" if fmt == "csv" else r"tau2-bench pass\textasciicircum{}1"
    assert head in text and "unavailable" in text


def test_tau2_headline_is_the_macro_mean_over_domains(tmp_path: Path) -> None:
    from spade.eval._runs import load_run
    from spade.eval.report._tool_use import cells

    out = _tool_run(tmp_path, "r", method="m")
    doc = json.loads((out / "results.json").read_text())
    entry = doc["suites"]["tau2"]
    micro = entry["score"]
    assert cells(load_run(out).suites["tau2"], False)["tau2"].value == micro  # older runs
    entry["per_domain"] = {"airline": {"pass_k": {"1": 1.0}, "n_tasks": 1},
                           "retail": {"pass_k": {"1": 0.0}, "n_tasks": 9}}
    entry["pass_k"], entry["pass_k_mean"] = {"1": 0.5}, "macro"
    (out / "results.json").write_text(json.dumps(doc))
    got = cells(load_run(out).suites["tau2"], False)
    assert got["tau2"].value == 0.5 and got["tau2/airline"].value == 1.0


def test_acebench_items_whose_gold_upstream_fails_are_named(tmp_path: Path) -> None:
    from spade.eval._runs import load_run
    from spade.eval.report import build_report, to_markdown
    from spade.eval.suites.acebench import UPSTREAM_GOLD_FAILURES

    out = _tool_run(tmp_path, "r", method="m")
    doc = json.loads((out / "results.json").read_text())
    doc["suites"]["acebench"]["upstream_gold_failures"] = {
        "agent_multi_step_0": UPSTREAM_GOLD_FAILURES["agent_multi_step_0"]}
    (out / "results.json").write_text(json.dumps(doc))
    md = to_markdown(build_report([load_run(out)]))
    assert "ACEBench agent_multi_step_0: its gold milestones do not lead" in md


def test_bfcl_non_live_recorded_before_the_leaderboard_is_not_shown(tmp_path: Path, capsys):
    """A run whose non-live was Python simple alone (no ``leaderboard``) is not passed off
    as bfcl-eval's non-live, which averages Python, Java and JavaScript simple."""
    run = _tool_run(tmp_path, "old", method="base")
    doc = json.loads((run / "results.json").read_text())
    del doc["suites"]["bfcl_v4"]["leaderboard"]
    del doc["suites"]["bfcl_v4"]["groups"]["overall"]
    (run / "results.json").write_text(json.dumps(doc))
    ours = _table(_md([run], capsys=capsys))["base"]
    assert ours["BFCL v4 non-live"] == "n/a"
    assert ours["BFCL v4 live"].startswith("25.0")
    assert ours.get("BFCL v4 Overall Acc") in (None, "", "n/a")
