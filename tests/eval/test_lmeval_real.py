"""lm-eval itself on our local data: generated task files, and a real greedy run compared
with our harness (prompts, completions, per-item scores). See eval/README.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalrun import data_dir
from spade.eval._protocol import build
from spade.eval.crosscheck import LocalTask, write_task
from spade.eval.crosscheck.__main__ import main as crosscheck_main
from spade.eval.crosscheck._lmeval import _parse, compare, offline_env, summarize_comparisons
from spade.eval.data import DataDir
from spade.eval.suites import SUITES

from spade.errors import UserError

pytest.importorskip("lm_eval")


def _items(suite_id: str, n: int) -> tuple[object, list]:
    suite = SUITES.get(suite_id)(build(suite_id, {"samples": 1}), 0)
    return suite, suite.load(DataDir(data_dir())).items[:n]


def _load(tmp_path: Path, suite_id: str, flavour: str) -> tuple[object, list[dict]]:
    offline_env()
    from lm_eval.tasks import TaskManager

    local = write_task(suite_id, flavour, DataDir(data_dir()), tmp_path)
    task = TaskManager(include_path=str(tmp_path), include_defaults=False).load(
        [local.name])["tasks"][local.name]
    return task, [dict(d) for d in list(task.eval_docs)[:3]]


def test_stock_tasks_read_the_local_files_in_our_order(tmp_path: Path) -> None:
    task, docs = _load(tmp_path, "aime24", "stock")
    _, ours = _items("aime24", 3)
    assert [str(d["id"]) for d in docs] == [i.key for i in ours]
    assert task.doc_to_text(docs[0]) == f"Question: {ours[0].data['problem']}\nAnswer:"
    assert task.doc_to_target(docs[0]) == ours[0].data["answer"]
    task, docs = _load(tmp_path / "g", "gpqa_diamond", "stock")
    _, ours = _items("gpqa_diamond", 3)
    assert [d["Record ID"] for d in docs] == [i.key for i in ours]
    from lm_eval.tasks.gpqa.cot_zeroshot.utils import preprocess

    for d, item in zip(docs, ours, strict=True):  # lm-eval's own shuffle, target follows it
        letter = d["answer"].strip("()")
        assert d["choices"][ord(letter) - 65] == preprocess(item.data["Correct Answer"])


@pytest.mark.parametrize("suite_id", ["aime25", "gpqa_diamond"])
def test_matched_tasks_carry_our_exact_prompt(tmp_path: Path, suite_id: str) -> None:
    task, docs = _load(tmp_path, suite_id, "matched")
    suite, ours = _items(suite_id, 3)
    for d, item in zip(docs, ours, strict=True):
        assert d["id"] == item.key
        assert task.doc_to_text(d) == suite.messages(item, 0)[0]["content"]
        if suite_id == "gpqa_diamond":
            assert task.doc_to_target(d) == f"({suite.correct_letter(item, 0)})"
            assert item.data["Correct Answer"] in d["choices"]
    assert task.config.generation_kwargs["until"] == []


def test_bad_requests_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(UserError, match="no lm-eval cross-check"):
        write_task("livecodebench", "stock", DataDir(data_dir()), tmp_path)
    with pytest.raises(UserError, match="flavour"):
        write_task("aime24", "fancy", DataDir(data_dir()), tmp_path)
    assert crosscheck_main(["--suites", "aime24,nope"]) == 2
    (tmp_path / "x").write_text("")
    assert crosscheck_main(["--model", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err


def test_log_folding_and_comparison() -> None:
    task = LocalTask("t", "gpqa_diamond", "matched", Path("t.yaml"), "id")
    rec = {"doc_id": 0, "doc": {"id": "r1"}, "arguments": [["P", {}]], "resps": [["so 11"]],
           "target": "(B)"}
    logged = [dict(rec, filter="strict-match", filtered_resps=["[invalid]"], exact_match=0),
              dict(rec, filter="flexible-extract", filtered_resps=["(B)"], exact_match=1)]
    [s] = _parse(task, logged)
    assert s.primary() == ("(B)", 1.0) and s.scores["strict-match"] == 0.0
    rows = compare([s], {("gpqa_diamond", "r1"): (None, 0.0)},
                   our_prompts={("gpqa_diamond", "r1"): "P"},
                   ours_hf={("gpqa_diamond", "r1"): ("so 11", 0.0)})
    assert rows[0].same_prompt and rows[0].same_completion and not rows[0].scorer_agree
    assert summarize_comparisons(rows)["gpqa_diamond/matched"]["scorer_agree"] == 0
    unmeasured = summarize_comparisons(compare([s], {("gpqa_diamond", "r1"): ("B", 1.0)}))
    assert unmeasured["gpqa_diamond/matched"] == dict(unmeasured["gpqa_diamond/matched"],
                                                      same_completion=None, scorer_agree=1)
    with pytest.raises(UserError, match="no score of ours"):
        compare([s], {})


@pytest.mark.slow
def test_real_lmeval_run_agrees_with_our_harness(tmp_path: Path) -> None:
    """3 AIME items, greedy, 32 new tokens, SmolLM2-135M-Instruct, both flavours."""
    pytest.importorskip("transformers")
    from spade.eval.crosscheck import crosscheck

    from spade.policy import prepare_smollm2

    try:
        model = prepare_smollm2()
    except UserError as exc:
        pytest.skip(str(exc))
    report = crosscheck(model, ["aime24"], tmp_path / "xc", data_dir(), limit=3, max_tokens=32)
    matched, stock = report["summary"]["aime24/matched"], report["summary"]["aime24/stock"]
    # Our prompt through lm-eval with the chat template: the very same text and greedy tokens.
    assert matched == dict(matched, n_items=3, same_prompt=3, same_completion=3, scorer_agree=3)
    # lm-eval's own prompt ("Question: ...\nAnswer:", no chat template) differs by design.
    assert stock["n_items"] == 3 and stock["same_prompt"] == 0
    items = report["items"]
    assert all(r["scorer_agree"] for r in items), [r for r in items if not r["scorer_agree"]]
    _, ours = _items("aime24", 3)
    assert [r["id"] for r in items if r["flavour"] == "stock"] == [i.key for i in ours]
    for flavour in ("stock", "matched"):
        agg = report["lm_eval_aggregate"][flavour]["aime24"]["exact_match,none"]
        assert agg == pytest.approx(report["summary"][f"aime24/{flavour}"]["lm_eval_score"])
    for r in items:
        if r["same_completion"]:
            assert r["ours_hf_score"] == r["ours_score"]
    assert (tmp_path / "xc" / "replay_stock.jsonl").is_file()
