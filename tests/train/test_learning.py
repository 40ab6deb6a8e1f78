"""The learning check as a test: GRPO through the whole loop must beat a frozen copy.

Slow (tens of minutes on 2 CPU cores): ``benchmarks/learning.py`` with its defaults.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.bwrap]
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "learning.py"


def test_grpo_raises_the_held_out_solve_rate_over_a_frozen_copy(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    from spade.policy import smollm2_dir

    if not (smollm2_dir() / "config.json").is_file():
        pytest.skip("SmolLM2 is not prepared (spade.policy.prepare_smollm2)")
    spec = importlib.util.spec_from_file_location("learning_bench", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(steps=8, heldout=64, samples=1, run_dir=tmp_path / "run")
    assert 0.1 <= result["frozen_solve_rate"] <= 0.6, result
    assert result["heldout_seeds"] >= 64 and len(result["curve"]) == result["steps"]
    assert result["trained_solve_rate"] > result["frozen_solve_rate"], result
    assert result["p_value"] < 0.05, result
