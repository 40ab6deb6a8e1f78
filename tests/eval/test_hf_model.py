"""The hf provider on the real SmolLM2-135M-Instruct (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results, samples


@pytest.fixture(scope="module")
def smollm2() -> Path:
    pytest.importorskip("transformers")
    from spade.policy import prepare_smollm2

    return prepare_smollm2()


def test_tiny_real_model_run(tmp_path: Path, smollm2: Path) -> None:
    out = tmp_path / "run"
    assert cli("--model", f"hf:{smollm2}", "--suites", "aime24", "--limit", "2", "--samples", "1",
               "--max-tokens", "8", "--temperature", "0", "--device", "cpu",
               "--out", str(out), "--data-dir", str(data_dir())) == 0
    res = results(out)
    assert res["model"]["name"] == smollm2.name and len(res["model"]["sha256"]) == 64
    recs = samples(out, "aime24")
    assert len(recs) == 2 and all(r["completion"].strip() for r in recs)
    assert res["suites"]["aime24"]["protocol"]["max_tokens"] == 8


@pytest.mark.slow
def test_greedy_is_reproducible_and_resumes_identically(tmp_path: Path, smollm2: Path) -> None:
    args = ["--model", f"hf:{smollm2}", "--suites", "aime25,gpqa_diamond", "--limit", "1",
            "--samples", "2", "--max-tokens", "12", "--temperature", "0", "--device", "cpu",
            "--data-dir", str(data_dir())]
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli(*args, "--out", str(a)) == 0
    assert cli(*args, "--out", str(b)) == 0
    for sid in ("aime25", "gpqa_diamond"):
        texts = [r["completion"] for r in samples(a, sid)]
        assert texts == [r["completion"] for r in samples(b, sid)]
        assert results(a)["suites"][sid]["score"] == results(b)["suites"][sid]["score"]
