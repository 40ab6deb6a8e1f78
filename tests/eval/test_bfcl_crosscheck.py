"""Our BFCL verdicts equal bfcl-eval's own entry point (``bfcl evaluate``) on the same
outputs: known wrong answers, the oracle, and real SmolLM2 replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _bfcl import bfcl_python, records, replay_file, run
from spade.eval.suites.bfcl import CATEGORIES
from spade.eval.suites.bfcl_crosscheck import crosscheck
from test_bfcl import WRONG_CATEGORIES, _call, _oracle_scripts, wrong_answer_set


def test_wrong_answers_and_gold_agree_with_bfcl_evaluate(tmp_path: Path) -> None:
    python = bfcl_python()
    path, _ = wrong_answer_set(tmp_path, tmp_path / "gold")
    run(tmp_path / "w", f"replay:{path}", WRONG_CATEGORIES, 2)
    report = crosscheck(tmp_path / "w", python)
    assert report["differ"] == [] and report["withheld"] == []
    assert report["items"] == report["agree"] == len(records(tmp_path / "w"))
    native = "gpt-4o-2024-11-20-FC"  # the handler that reads native calls
    assert report["upstream_headers"][f"{native}/parallel"]["accuracy"] == 0.5
    assert report["upstream_headers"][f"{native}/multi_turn_base"]["accuracy"] == 0.0


@pytest.mark.slow
def test_leaderboard_equals_bfcl_evaluates_own_tables(tmp_path: Path) -> None:
    """Every category, two items each, some answered wrong (Java and JavaScript among
    them), every reply read by one handler: the run's group numbers and Overall Acc are
    the cells of the leaderboard CSVs ``bfcl evaluate`` writes for the same outputs."""
    python = bfcl_python()
    gold = _oracle_scripts(tmp_path / "gold", list(CATEGORIES))
    path, _ = wrong_answer_set(tmp_path, tmp_path / "gold")
    scripts = {**gold,
               **{json.loads(line)["id"]: json.loads(json.loads(line)["completion"])
                  for line in path.read_text().splitlines()}}
    one = lambda *calls: {"turns": [[{"content": "", "tool_calls": list(calls)}]]}  # noqa: E731
    scripts["simple_java_0"] = one(_call("GeometryPresentation_createPresentation",
                                         controller="mapController", parent="elsewhere"))
    scripts["simple_javascript_1"] = {"turns": [["I would rather not."]]}
    scripts["live_multiple_0-0-0"] = {"turns": [["No call."]]}
    replay = replay_file(tmp_path / "all.jsonl", scripts)
    res = run(tmp_path / "w", f"replay:{replay}", list(CATEGORIES), 2,
              extra={"tool_format": "openai_fc"})
    entry = res["suites"]["bfcl_v4"]
    cats = entry["categories"]
    assert cats["simple_java"]["accuracy"] == 0.5 and cats["simple_javascript"]["accuracy"] == 0.5
    report = crosscheck(tmp_path / "w", python)
    assert report["differ"] == [] and report["withheld"] == []
    assert report["leaderboard_differ"] == []
    board = report["upstream_headers"]["gpt-4o-2024-11-20-FC/leaderboard"]
    overall = float(board["data_overall"]["Overall Acc"].rstrip("%"))
    assert overall == round(entry["groups"]["overall"] * 100, 2) and 0 < overall < 60
    simple = float(board["data_non_live"]["Simple AST"].rstrip("%"))
    assert simple == round(entry["groups"]["simple"] * 100, 2)
    assert entry["groups"]["simple"] != cats["simple_python"]["accuracy"]


def _smollm2() -> Path:
    pytest.importorskip("transformers")
    from spade.errors import UserError
    from spade.policy import prepare_smollm2

    try:
        return prepare_smollm2()
    except UserError as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
def test_real_model_outputs_agree_with_bfcl_evaluate(tmp_path: Path) -> None:
    python = bfcl_python()
    model = _smollm2()
    cats = ["simple_python", "parallel", "irrelevance", "live_simple"]
    run(tmp_path / "hf", f"hf:{model}", cats, 2,
        overrides={"max_tokens": 48}, device="cpu", batch_size=8)
    recs = records(tmp_path / "hf")
    assert len(recs) == 8 and all(r["details"]["transcript"]["turns"] for r in recs.values())
    report = crosscheck(tmp_path / "hf", python)
    assert report["differ"] == [] and report["agree"] == 8


@pytest.mark.slow
def test_real_model_multi_turn_agrees_with_bfcl_evaluate(tmp_path: Path) -> None:
    python = bfcl_python()
    model = _smollm2()
    # one episode: ~6.7k prompt tokens per step for a 135M model on CPU (minutes)
    run(tmp_path / "hf", f"hf:{model}", ["multi_turn_miss_func"], 1,
        overrides={"max_tokens": 32}, device="cpu")
    rec = records(tmp_path / "hf")[("multi_turn_miss_func_0", 0)]
    assert rec["details"]["transcript"]["turns"]
    report = crosscheck(tmp_path / "hf", python)
    assert report["differ"] == [] and report["agree"] + len(report["withheld"]) == 1
