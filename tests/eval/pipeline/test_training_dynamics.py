"""training.json's variance share and held-out test, and the per-step dynamics plot, from
real-shaped metrics lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade.eval.pipeline._training import heldout, paired_p_value, plot_dynamics, read_summary


def _line(step: int, designer_groups: tuple[int, int], agent_groups: tuple[int, int],
          designer: dict[str, object] | None) -> dict[str, object]:
    return {"step": step, "pool": {"generation": 1},
            # written before starters were named so: read as "starter"
            "agent": {"episodes": 8, "plays_by_origin": {"designed": 4, "seed": 4},
                      "solve_rate_by_origin": {"designed": 0.5, "seed": 0.25}},
            "designer": designer,
            "zero_variance": {
                "designer": {"n_groups": designer_groups[0],
                             "n_zero_variance": designer_groups[1]},
                "agent": {"n_groups": agent_groups[0], "n_zero_variance": agent_groups[1]}}}


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    design = {"designs": 4, "valid": 2, "validity_rate": 0.5,
              "failures_by_stage": {"parse": 1, "load": 1}, "reward_mean": -0.3,
              "reward_min": -1.0, "reward_max": 0.5,
              "regret": {"n": 2, "mean": 0.0, "min": 0.0, "max": 0.0}}
    lines = [_line(0, (1, 0), (3, 2), design), _line(1, (0, 0), (4, 1), None)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_variance_share_is_the_share_of_groups_with_any_advantage(tmp_path: Path) -> None:
    s = read_summary("SPADE", "spade", _run(tmp_path))
    assert s is not None
    assert s.variance_share == {"designer": 1.0, "agent": pytest.approx(4 / 7)}
    data = s.to_json()
    assert data["variance_share"] == s.variance_share and "groups" not in data
    assert data["validity_rate"] == 0.5 and data["plays_by_origin"] == {"designed": 8,
                                                                        "starter": 8}
    assert data["heldout"] is None


def test_no_groups_is_not_a_share_of_zero(tmp_path: Path) -> None:
    run = tmp_path / "fixed"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"step": 0, "agent": {"episodes": 8}}) + "\n")
    s = read_summary("fixed", "fixed_env", run)
    assert s is not None and s.variance_share == {"designer": None, "agent": None}


def test_paired_test_is_one_sided_and_exact() -> None:
    assert paired_p_value([0, 0, 0, 0], [1, 1, 1, 1]) == pytest.approx(1 / 16)
    assert paired_p_value([1, 1, 1, 1], [0, 0, 0, 0]) == 1.0
    assert paired_p_value([0, 1], [0, 1]) == 1.0  # nothing differs: no evidence
    # 5 items up, 1 down: P(sum of signed diffs >= 4) under random signs = 7/64
    assert paired_p_value([0] * 5 + [1], [1] * 5 + [0]) == pytest.approx(7 / 64)
    many = paired_p_value([0] * 30, [1] * 25 + [0] * 5)
    assert many < 1e-3
    record = heldout("rg_slice", [0, 0, 1, 0], [1, 1, 1, 0])
    assert record == {"suite": "rg_slice", "items": 4, "base": 0.25, "final": 0.75,
                      "p_value": 0.25}
    with pytest.raises(ValueError, match="paired"):
        paired_p_value([0, 1], [1])


def test_dynamics_plot_is_written_for_runs_with_metrics(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "training_dynamics.png"
    assert plot_dynamics([("SPADE", _run(tmp_path)), ("none", tmp_path / "missing")], out)
    assert out.stat().st_size > 10_000 and out.read_bytes()[:4] == b"\x89PNG"
    assert not plot_dynamics([("none", tmp_path / "missing")], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
