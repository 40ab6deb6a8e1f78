"""Real agentic runs (BFCL v4 with bfcl-eval, ACEBench on its checkout) exported to inspect
logs with their tool calls and results, shown in the tool-use table and gated on items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _bfcl import bfcl_python, records, replay_file, run
from _evalrun import cli, data_dir
from spade.eval._runs import load_run
from spade.eval.inspect_export import export_run
from spade.eval.regress import GateConfig, compare_runs

from spade.cli import main

inspect_log = pytest.importorskip("inspect_ai.log")


def _tool_pairs(sample: Any) -> list[tuple[str, str]]:
    """(call id, function) of every assistant call that a tool message answers."""
    answered = {m.tool_call_id for m in sample.messages if m.role == "tool"}
    return [
        (c.id, c.function)
        for m in sample.messages
        if m.role == "assistant"
        for c in (m.tool_calls or [])
        if c.id in answered
    ]


@pytest.fixture(scope="module")
def bfcl_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An oracle run and a replay run of it with the first 6 simple_python items wrong."""
    bfcl_python()
    root = tmp_path_factory.mktemp("bfcl")
    cats = ["simple_python", "multi_turn_base", "live_relevance"]
    run(root / "oracle", "oracle", cats, 8)
    scripts = {key: json.loads(r["completion"]) for (key, _), r in records(root / "oracle").items()}
    for key in sorted(k for k in scripts if k.startswith("simple_python"))[:6]:
        scripts[key] = {"turns": [["I cannot help with that."]]}  # a missing call
    replay = replay_file(root / "wrong.jsonl", scripts)
    run(root / "wrong", f"replay:{replay}", cats, 8)
    return root / "oracle", root / "wrong"


def test_bfcl_export_has_each_call_answered_by_its_tool_result(bfcl_runs: tuple[Path, Path]):
    oracle, _ = bfcl_runs
    res = export_run(oracle)
    log = inspect_log.read_eval_log(str(res.logs["bfcl_v4"]))
    assert log.status == "success" and len(log.samples) == 24
    recs = records(oracle)
    multi = [s for s in log.samples if str(s.id).startswith("multi_turn_base")]
    assert multi and all(_tool_pairs(s) for s in multi)
    for s in multi:
        calls = [c for m in s.messages if m.role == "assistant" for c in (m.tool_calls or [])]
        rec = recs[(str(s.id), 0)]
        steps = [st for t in rec["details"]["transcript"]["turns"] for st in t["steps"]]
        assert [c.function for c in calls] == [c["name"] for st in steps for c in st["calls"]]
        assert [m.text for m in s.messages if m.role == "tool"] == [
            r for st in steps for r in st["results"]
        ]
        assert s.scores["bfcl_v4"].value == 1.0 and s.metadata["prompt"] == "transcript"
    metrics = log.results.scores[0].metrics
    assert metrics["multi_turn_base"].value == 1.0 and metrics["mean"].value == 1.0
    assert log.eval.metadata["scorer"]["implementation"] == "bfcl-eval"


def test_bfcl_report_and_gate_on_real_runs(bfcl_runs: tuple[Path, Path], capsys):
    oracle, wrong = bfcl_runs
    assert main(["report", str(oracle), "--no-reference"]) == 0
    md = capsys.readouterr().out
    line = next(x for x in md.splitlines() if x.startswith("| oracle |"))
    # relevance is live_relevance alone; the other groups lack member categories: n/a, not 0
    # Overall Acc and four groups (non-live, live, multi-turn, irrelevance) and the Avg
    assert line.count("100.0") == 1 and line.count("n/a") == 6
    result = compare_runs(load_run(oracle), load_run(wrong), GateConfig())
    (comp,) = result.comparisons
    assert comp.verdict == "worse" and comp.n_paired == 24
    assert comp.delta == pytest.approx(-6 / 24) and not result.passed
    assert main(["regress", "--reference", str(oracle), "--candidate", str(wrong)]) == 1


def test_acebench_export_and_table_without_a_user_simulator(tmp_path: Path, capsys):
    from spade.eval.suites._acebench_upstream import resolve_dir

    if not (resolve_dir() / "eval_main.py").is_file():
        pytest.skip("ACEBench checkout not found")
    out = tmp_path / "ace"
    assert (
        cli(
            "--model",
            "oracle",
            "--suites",
            "acebench",
            "--limit",
            "1",
            "--out",
            str(out),
            "--data-dir",
            str(data_dir()),
        )
        == 0
    )
    logs = list((out / "inspect").glob("*_acebench_*.eval"))
    assert len(logs) == 1  # the automatic export
    log = inspect_log.read_eval_log(str(logs[0]))
    recs = {
        json.loads(x)["id"]: json.loads(x)
        for x in (out / "samples" / "acebench.jsonl").read_text().splitlines()
    }
    step = [s for s in log.samples if str(s.id).startswith("agent_multi_step")]
    assert step
    for s in step:  # ACEBench's protocol: calls as Python-call text, results as tool turns
        convo = recs[str(s.id)]["details"]["messages"]
        assert [m.role for m in s.messages] == [m["role"] for m in convo]
        assert (
            [m.text for m in s.messages if m.role == "tool"]
            == [m["content"] for m in convo if m["role"] == "tool"]
            != []
        )
    assert log.results.scores[0].metrics["normal"].value == 1.0
    assert main(["report", str(out), "--no-reference"]) == 0
    md = capsys.readouterr().out
    line = next(x for x in md.splitlines() if x.startswith("| oracle |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    head = next(x for x in md.splitlines() if x.startswith("| Method |"))
    named = dict(zip([c.strip() for c in head.strip("|").split("|")], cells, strict=True))
    assert named["ACEBench normal"] == "100.0†" and named["ACEBench special"] == "100.0†"
    assert named["ACEBench agent"] == "unavailable" == named["ACEBench summary"]


@pytest.mark.slow  # two tau2 runs of 3 tasks x 2 trials against tau2's own environments
def test_tau2_export_pass_k_table_and_gate(tmp_path: Path, capsys):
    d = data_dir()
    if not (d / "tau2").is_dir():
        pytest.skip("tau2 data not in the shared data dir")
    args = (
        "--suites",
        "tau2",
        "--user-model",
        "gold",
        "--limit",
        "1",
        "--samples",
        "2",
        "--data-dir",
        str(d),
    )
    gold = tmp_path / "gold"
    assert cli("--model", "oracle", "--out", str(gold), *args) == 0
    log = inspect_log.read_eval_log(str(next((gold / "inspect").glob("*_tau2_*.eval"))))
    metrics = log.results.scores[0].metrics
    assert metrics["pass^1"].value == 1.0 == metrics["pass^2"].value
    assert {"airline pass^1", "retail pass^2", "telecom pass^1"} <= set(metrics)
    assert log.eval.model_roles["user"].model == "gold" and len(log.samples) == 6
    telecom = next(s for s in log.samples if str(s.id).startswith("telecom/"))
    user_calls = [
        m
        for m in telecom.messages
        if m.role == "user" and m.metadata and m.metadata.get("tool_calls")
    ]
    assert user_calls and "[user tool call" in user_calls[0].text  # the user's own tools
    # a candidate whose second trial of one task calls its tools with a wrong argument
    recs = [json.loads(x) for x in (gold / "samples" / "tau2.jsonl").read_text().splitlines()]
    target = next(
        r["id"]
        for r in sorted(recs, key=lambda r: r["id"])
        if '"tool_calls": [{' in r["completion"]
    )
    lines = []
    for r in recs:
        script = json.loads(r["completion"])
        if r["id"] == target and r["sample"] == 1:
            for step in (st for turn in script["turns"] for st in turn):
                native = step.get("tool_calls") if isinstance(step, dict) else None
                for call in native or []:  # text steps are stored as their text
                    given = call["arguments"]  # stored as the server would send it
                    given = json.loads(given) if isinstance(given, str) else given
                    for key in list(given)[:1]:
                        given[key] = "WRONG-VALUE"
                    call["arguments"] = json.dumps(given)
        lines.append(
            json.dumps(
                {
                    "suite": "tau2",
                    "id": r["id"],
                    "sample": r["sample"],
                    "completion": json.dumps(script),
                }
            )
        )
    replay = tmp_path / "cand.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    cand = tmp_path / "cand"
    assert cli("--model", f"replay:{replay}", "--out", str(cand), *args) == 0
    bad = [json.loads(x) for x in (cand / "samples" / "tau2.jsonl").read_text().splitlines()]
    assert [(r["id"], r["sample"]) for r in bad if r["score"] < 1] == [(target, 1)]
    by = {c.suite: c for c in compare_runs(load_run(gold), load_run(cand)).comparisons}
    assert by["tau2"].delta == pytest.approx(-1 / 6)  # one trial of six
    assert by["tau2 pass^2"].delta == pytest.approx(-1 / 3) and by["tau2 pass^2"].n_paired == 3
    assert main(["report", str(gold), "--no-reference"]) == 0
    md = capsys.readouterr().out
    assert "tau2-bench user simulator: gold" in md
