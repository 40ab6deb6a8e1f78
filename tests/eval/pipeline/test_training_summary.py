"""The report's training section: validity by stage and agent plays by origin, summed over a
run's real metrics lines."""

from __future__ import annotations

import json
from pathlib import Path

from spade.eval.pipeline._training import read_summary, render_training


def _write(run: Path, lines: list[dict[str, object]]) -> None:
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines),
                                       encoding="utf-8")


def _line(step: int, designer: dict[str, object] | None, designed: int, starter: int,
          generation: int = 0) -> dict[str, object]:
    return {"step": step, "pool": {"generation": generation},
            "agent": {"episodes": designed + starter,
                      "plays_by_origin": {"designed": designed, "starter": starter}},
            "designer": designer}


def test_sums_steps_and_counts_survivors_in_stage_order(tmp_path: Path) -> None:
    run = tmp_path / "spade"
    _write(run, [
        _line(0, {"designs": 8, "valid": 1, "starter_near_copies": 1,
                  "failures_by_stage": {"parse": 5, "determinism": 1, "play_fault": 1}}, 0, 16),
        _line(1, None, 4, 12, generation=1),
        _line(2, {"designs": 8, "valid": 2, "starter_near_copies": 0,
                  "failures_by_stage": {"parse": 4, "load": 2}}, 8, 8, generation=1),
    ])
    s = read_summary("SPADE", "spade", run)
    assert s is not None
    assert (s.steps, s.designs, s.valid, s.agent_plays) == (3, 16, 3, 48)
    assert s.plays_by_origin == {"designed": 12, "starter": 36}
    assert s.failures_by_stage == {"parse": 9, "determinism": 1, "play_fault": 1, "load": 2}
    text = render_training([s])
    # parse (9 rejected) -> 7 left, load (2) -> 5, determinism (1) -> 4, play_fault (1) -> 3
    rows = [r for r in text.splitlines() if r.startswith("| ") and "rejected" not in r]
    stage_rows = [r.split("|")[1:5] for r in rows if r.split("|")[1].strip() in
                  ("parse", "load", "determinism", "play_fault")]
    assert [[c.strip() for c in r] for r in stage_rows] == [
        ["parse", "9", "7", "43.8%"], ["load", "2", "5", "31.2%"],
        ["determinism", "1", "4", "25.0%"], ["play_fault", "1", "3", "18.8%"]]
    assert "| SPADE | 3 | 48 | 12 (25.0%) | 36 (75.0%) | 16 | 3 | 18.8% | 33.3% | 1 |" in text
    assert s.to_json()["near_copy_share"] == 1 / 3


def test_a_step_logged_twice_counts_once(tmp_path: Path) -> None:
    run = tmp_path / "r"
    first = _line(0, {"designs": 4, "valid": 0, "failures_by_stage": {"parse": 4}}, 0, 8)
    _write(run, [first, first])
    s = read_summary("SPADE", "spade", run)
    assert s is not None and (s.steps, s.designs, s.agent_plays) == (1, 4, 8)


def test_fixed_pool_and_unrecorded_origins(tmp_path: Path) -> None:
    fixed, old = tmp_path / "fixed", tmp_path / "old"
    _write(fixed, [{"step": 0, "agent": {"episodes": 16}, "designer": None}])
    _write(old, [{"step": 0, "agent": {"episodes": 16}, "designer": None}])
    text = render_training([read_summary("fixed-RG", "fixed_env", fixed),  # type: ignore[list-item]
                            read_summary("SPADE", "spade", old)])
    assert "| fixed-RG | 1 | 16 | - | 16 (fixed pool) |" in text
    assert "| SPADE | 1 | 16 | not recorded | not recorded |" in text
    assert "designs)" not in text  # no stage table without designs


def test_no_run_yet(tmp_path: Path) -> None:
    assert read_summary("SPADE", "spade", tmp_path / "missing") is None
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "metrics.jsonl").write_text("", encoding="utf-8")
    assert read_summary("SPADE", "spade", tmp_path / "empty") is None
    assert render_training([]) == ""
