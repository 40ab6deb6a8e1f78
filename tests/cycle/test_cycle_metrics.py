"""The per-cycle metric helpers: what the resume-equality check may drop."""

from __future__ import annotations

from spade.cycle._metrics import is_timing_key, without_timing


def test_timing_filter_keeps_timeout_counts() -> None:
    metrics = {
        "stop_reasons": {"hinted": {"won": 3, "timeout": 2, "env_error": 1}},
        "timing_s": {"play_s": 1.5},
        "wall_s": 9.0,
        "updated": "2026-01-01T00:00:00+00:00",
        "sandbox": {"timeouts": 4, "call_timeout_s": 10.0},
    }
    assert without_timing(metrics) == {
        "stop_reasons": {"hinted": {"won": 3, "timeout": 2, "env_error": 1}},
        "sandbox": {"timeouts": 4},
    }
    assert not is_timing_key("timeout") and is_timing_key("play_s")


def test_mean_returns_leave_out_play_fault_environments() -> None:
    """Solve rates cover only environments that played cleanly; so do mean returns."""
    from types import SimpleNamespace as NS

    from spade.cycle._outcome import cycle_metrics
    from spade.cycle._types import PLAY_FAULT, VALID
    from spade.episodes import StopReason
    from spade.rewards import Arm

    def design(env_id: str, outcome: str) -> NS:
        score = NS(solve_rate_hinted=1.0, solve_rate_unhinted=0.0, regret=1.0, reward=1.0)
        return NS(env_id=env_id, outcome=outcome, score=score, verdict=None, skill="logic",
                  parse=NS(failure=None), generation=NS(token_ids=()))

    def play(env_id: str, arm: Arm, ret: float) -> NS:
        t = NS(env_id=env_id, total_return=ret, stop_reason=StopReason.TERMINATED,
               agent_tokens=1)
        return NS(trajectory=t, arm=arm)

    plays = [play("ok", Arm.HINTED, 1.0), play("ok", Arm.UNHINTED, 0.0),
             play("bad", Arm.HINTED, -5.0), play("bad", Arm.UNHINTED, -5.0)]
    config = NS(designer=NS(setting="games", prompts_per_cycle=1),
                reward=NS(variant="regret", invalid_penalty=-1.0, invalid_shaping=0.0))
    stats = NS(to_json=lambda: {})
    m = cycle_metrics(0, config, [design("ok", VALID), design("bad", PLAY_FAULT)], plays,
                      NS(to_json=lambda: {}), stats, stats, 0, {})
    assert (m["mean_return_hinted"], m["mean_return_unhinted"]) == (1.0, 0.0)
    assert m["solve_rate_hinted"] == 1.0
