"""Turning a cycle's designs and plays into memory entries, store records and metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spade.config import RunConfig
from spade.cycle._metrics import counts, distribution, mean_or_none, rates, round_floats
from spade.cycle._types import (
    PARSE,
    PLAY_FAULT,
    UNFAIR_PLAY,
    VALID,
    AgentSample,
    DesignSample,
)
from spade.diversity import DiversityReport
from spade.episodes import StopReason
from spade.memory import MemoryEntry, summarize_env
from spade.rewards import Arm, GroupStats
from spade.store import EnvRecord, PlayRecord
from spade.validate import Stage

#: Failure outcomes in pipeline order (stages as the validator runs them).
OUTCOMES = (PARSE, *(str(s) for s in Stage if s is not Stage.DONE), PLAY_FAULT, UNFAIR_PLAY)


def memory_entries(cycle: int, valid: Sequence[DesignSample], first_obs: Mapping[str, str],
                   embeddings: np.ndarray) -> list[MemoryEntry]:
    """One entry per valid environment, in design order, with its embedding."""
    out = []
    for k, s in enumerate(valid):
        score = s.score
        assert score.solve_rate_hinted is not None and score.solve_rate_unhinted is not None
        out.append(MemoryEntry(
            env_id=s.env_id, source=s.parse.source or "", hint=s.parse.hint or "",
            skill=s.skill, doc_id=s.doc_id,
            solve_rate_hinted=score.solve_rate_hinted,
            solve_rate_unhinted=score.solve_rate_unhinted,
            regret=score.regret or 0.0, cycle=cycle,
            summary=summarize_env(s.parse.source or "", first_observation=first_obs.get(s.env_id)),
            embedding=tuple(round(float(x), 6) for x in embeddings[k]) if len(embeddings) else None,
        ))
    return out


def _verdict_summary(s: DesignSample) -> dict[str, Any] | None:
    v = s.verdict
    if v is None:
        return None
    return {"valid": v.valid, "stage": str(v.stage), "reason": v.reason,
            "class_name": v.class_name, "kind": v.kind}


def records(cycle: int, designs: Sequence[DesignSample], plays: Sequence[AgentSample]
            ) -> tuple[tuple[EnvRecord, ...], tuple[PlayRecord, ...]]:
    """Rows for the run store: every design (valid or not) and every play."""
    envs = []
    for s in designs:
        extra: dict[str, Any] = {
            "outcome": s.outcome, "prompt_index": s.prompt_index,
            "designer_advantage": round(s.advantage, 6),
            "class_name": s.parse.class_name,
            "kind": s.verdict.kind if s.verdict else None,
            "summary": _verdict_summary(s),
        }
        if s.note:
            extra["note"] = s.note
        if s.outcome == PARSE:
            extra["parse_failure"] = s.parse.reason
            extra["reply"] = s.reply
        envs.append(EnvRecord(
            env_id=s.env_id, cycle=cycle, source=s.parse.source or "", valid=s.valid,
            hint=s.parse.hint, skill=s.skill, doc_id=s.doc_id,
            verdict=s.verdict.to_json() if s.verdict else None,
            solve_rate_hinted=s.score.solve_rate_hinted,
            solve_rate_unhinted=s.score.solve_rate_unhinted,
            regret=s.score.regret, designer_reward=s.score.reward, extra=extra,
        ))
    rows = [
        PlayRecord(
            env_id=p.trajectory.env_id, cycle=cycle, arm=p.arm, index=p.play_index,
            seed=p.trajectory.seed, ret=p.trajectory.total_return,
            stop_reason=str(p.trajectory.stop_reason), turns=p.trajectory.num_turns,
            extra={"won": p.trajectory.won, "agent_tokens": p.trajectory.agent_tokens,
                   "advantage": None if p.advantage is None else round(p.advantage, 6),
                   "env_fault": p.trajectory.env_fault},
        )
        for p in plays
    ]
    return tuple(envs), tuple(rows)


def cycle_metrics(
    cycle: int,
    config: RunConfig,
    designs: Sequence[DesignSample],
    plays: Sequence[AgentSample],
    diversity: DiversityReport,
    designer_stats: GroupStats,
    agent_stats: GroupStats,
    memory_size: int,
    timing: Mapping[str, float],
) -> dict[str, Any]:
    """The JSON line of one cycle in ``metrics.jsonl`` (timings under ``timing_s``)."""
    n = len(designs)
    valid = [s for s in designs if s.outcome == VALID]
    failures = counts((s.outcome for s in designs if s.outcome != VALID), OUTCOMES)
    parse_reasons = counts(str(s.parse.failure) for s in designs if s.outcome == PARSE)
    hinted = [p.trajectory for p in plays if p.arm == Arm.HINTED]
    unhinted = [p.trajectory for p in plays if p.arm == Arm.UNHINTED]
    # returns, like solve rates, only over environments that played without a fault
    scored = {s.env_id for s in valid}
    hinted_ok = [t for t in hinted if t.env_id in scored]
    unhinted_ok = [t for t in unhinted if t.env_id in scored]
    rewards = [s.score.reward for s in designs]
    metrics: dict[str, Any] = {
        "cycle": cycle,
        "setting": config.designer.setting,
        "counts": {
            "prompts": config.designer.prompts_per_cycle, "designs": n,
            "parsed": sum(1 for s in designs if s.outcome != PARSE),
            "validated": sum(1 for s in designs if s.verdict is not None and s.verdict.valid),
            "valid": len(valid), "episodes": len(plays), "memory": memory_size,
            "env_steps": int(timing.get("env_steps", 0)),
            "env_loads": int(timing.get("env_loads", 0)),
            "designer_tokens": sum(len(s.generation.token_ids) for s in designs),
            "agent_tokens": sum(p.trajectory.agent_tokens for p in plays),
        },
        "validity_rate": len(valid) / n if n else 0.0,
        "failures_by_stage": failures,
        "failure_rate_by_stage": rates(failures, n),
        "parse_failures": parse_reasons,
        "solve_rate_hinted": mean_or_none([s.score.solve_rate_hinted for s in valid
                                           if s.score.solve_rate_hinted is not None]),
        "solve_rate_unhinted": mean_or_none([s.score.solve_rate_unhinted for s in valid
                                             if s.score.solve_rate_unhinted is not None]),
        "mean_return_hinted": mean_or_none([t.total_return for t in hinted_ok]),
        "mean_return_unhinted": mean_or_none([t.total_return for t in unhinted_ok]),
        "regret": distribution([s.score.regret or 0.0 for s in valid]),
        "designer_reward": {"variant": config.reward.variant,
                            "invalid_penalty": config.reward.invalid_penalty,
                            "invalid_shaping": config.reward.invalid_shaping,
                            "mean": mean_or_none(rewards)},
        "stop_reasons": {
            "hinted": counts((str(t.stop_reason) for t in hinted), [str(r) for r in StopReason]),
            "unhinted": counts((str(t.stop_reason) for t in unhinted),
                               [str(r) for r in StopReason]),
        },
        "zero_variance": {"designer": designer_stats.to_json(), "agent": agent_stats.to_json()},
        "diversity": diversity.to_json(),
        "skills": counts(s.skill for s in valid),
        "timing_s": {k: v for k, v in timing.items() if k.endswith("_s")},
    }
    return dict(round_floats(metrics))
