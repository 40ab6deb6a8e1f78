"""The run report (the demo's output) from real scripted-run metrics; the real-model demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cycle_configs import TINY, tiny_config, write_config

from spade.cycle import run_selfplay
from spade.cycle._report import read_metrics, render_report, summarize_cycles

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.needs("corpora")
def test_report_from_a_scripted_run(tmp_path: Path) -> None:
    config = tiny_config()
    summary = run_selfplay(config, tmp_path / "run", progress=lambda _: None)
    metrics = read_metrics(summary.metrics_path)
    s = summarize_cycles(metrics)
    assert s["designs"] == 12 and s["cycles"] == 2
    assert s["valid"] == sum(m["counts"]["valid"] for m in metrics)
    assert s["designs"] - s["valid"] == sum(s["failures_by_stage"].values())
    report = render_report(metrics, config, title="t")
    assert f"{s['valid']} of 12 designed environments were valid" in report
    for needle in ("with hint", "without hint", "Regret", "Diversity", "lexical"):
        assert needle in report
    for stage in s["failures_by_stage"]:
        assert f"| {stage} |" in report


@pytest.mark.slow
@pytest.mark.needs("corpora")
def test_demo_with_smollm2(tmp_path: Path) -> None:
    """The real demo path (SmolLM2 on CPU, bwrap), shrunk to one tiny cycle."""
    data = {**TINY, "cycles": 1, "policy": {"spec": "smollm2"},
            "designer": {**TINY["designer"], "prompts_per_cycle": 1, "designs_per_prompt": 2,
                         "max_document_chars": 200,
                         "sampling": {"temperature": 0.7, "max_new_tokens": 64}},
            "agent": {"plays_per_arm": 1, "max_turns": 1,
                      "sampling": {"temperature": 0.7, "max_new_tokens": 16}}}
    config = write_config(tmp_path / "demo.yaml", data)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "spade.demo", "--config", str(config),
         "--run-dir", str(tmp_path / "run"), "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "designed environments were valid" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["designs"] == 2 and summary["designer_tokens"] > 0
    assert (out / "report.md").is_file() and (out / "metrics.jsonl").is_file()
