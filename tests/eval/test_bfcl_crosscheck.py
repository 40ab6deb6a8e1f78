"""Our BFCL verdicts equal bfcl-eval's own entry point (``bfcl evaluate``) on the same
outputs: known wrong answers, the oracle, and real SmolLM2 replies."""

from __future__ import annotations

from pathlib import Path

import pytest
from _bfcl import bfcl_python, records, run
from test_bfcl import WRONG_CATEGORIES, wrong_answer_set

from eval.suites.bfcl_crosscheck import crosscheck


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
