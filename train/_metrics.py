"""One JSON line per training step: both roles' rollouts, the update, and the time split.

Keys (``metrics.jsonl``, TensorBoard gets every number, flattened with ``/``):
``agent`` (return and solve rate of the agent tickets' unhinted plays;
``agent.plays_by_origin`` ``{"designed": n, "starter": n}``: how many of those plays were
of designed environments and how many of bundled starter environments;
``agent.solve_rate_by_origin``: their solve rates), ``pool`` (the pool after
the step: ``generation``, ``size``, ``regenerated``, ``kept``, and ``pool.by_origin``
``{"designed": n, "starter": n}``, its environments by origin), ``designer``
(validity by stage, regret distribution, hinted/unhinted returns of the designs' matched
plays, diversity, ``starter_near_copies``: valid designs whose code is a near-copy of a
bundled starter-family module, the warm start's material; ``null`` on steps without
designer tickets), ``zero_variance`` per role,
``train`` (per-role loss, KL, entropy, clip fraction, grad norm, learning rate; filled by
the backend), ``tokens`` and ``timing_s`` (generation, environment, validation, update).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from spade.train._pool import ORIGINS, EnvPool
from spade.train._rollout import TicketResult, with_group_stats
from spade.train._tickets import Role

from spade.cycle._metrics import counts, distribution, mean_or_none, round_floats
from spade.cycle._outcome import OUTCOMES
from spade.cycle._types import VALID
from spade.diversity import nearest_code_similarity

__all__ = ["NEAR_COPY", "flatten", "step_metrics"]

#: Code similarity at which a design counts as a near-copy (the diversity module's
#: code near-duplicate threshold).
NEAR_COPY = 0.8


def _starter_near_copies(sources: Sequence[str]) -> int:
    """How many of ``sources`` are near-copies of a bundled starter-family module."""
    if not sources:
        return 0
    from spade.families import all_instances

    starters = [i.source for i in all_instances()]
    return sum(s >= NEAR_COPY for s in nearest_code_similarity(sources, starters))


def _agent(results: Sequence[TicketResult]) -> dict[str, Any]:
    plays = [p for r in results for p in r.trajectories]
    by_origin = dict.fromkeys(ORIGINS, 0)
    wins: dict[str, list[float]] = {o: [] for o in ORIGINS}
    for r in results:
        if r.env is not None:
            by_origin[r.env.origin] += len(r.trajectories)
            wins[r.env.origin] += [float(p.won) for p in r.trajectories]
    return {
        "tickets": sum(1 for r in results if r.ticket.role is Role.AGENT),
        "episodes": len(plays),
        "return_unhinted": mean_or_none([p.total_return for p in plays]),
        "solve_rate_unhinted": mean_or_none([float(p.won) for p in plays]),
        "env_faults": sum(1 for p in plays if p.env_fault),
        "mean_turns": mean_or_none([float(p.num_turns) for p in plays]),
        "plays_by_origin": by_origin,
        "solve_rate_by_origin": {o: mean_or_none(w) for o, w in wins.items()},
    }


def _designer(results: Sequence[TicketResult]) -> dict[str, Any] | None:
    cycles = [r.cycle for r in results if r.cycle is not None]
    if not cycles:
        return None
    designs = [d for c in cycles for d in c.designs]
    valid = [d for d in designs if d.outcome == VALID]
    plays = [p.trajectory for c in cycles for p in c.plays]
    hinted = [p for p in plays if str(p.arm) == "hinted"]
    unhinted = [p for p in plays if str(p.arm) == "unhinted"]
    diversity = [c.metrics.get("diversity", {}) for c in cycles]
    return {
        "designs": len(designs),
        "valid": len(valid),
        "validity_rate": len(valid) / len(designs) if designs else 0.0,
        "starter_near_copies": _starter_near_copies([d.parse.source or "" for d in valid]),
        "failures_by_stage": counts((d.outcome for d in designs if d.outcome != VALID),
                                    OUTCOMES),
        "regret": distribution([d.score.regret or 0.0 for d in valid]),
        "reward_mean": mean_or_none([d.score.reward for d in designs]),
        "reward_min": min((d.score.reward for d in designs), default=None),
        "reward_max": max((d.score.reward for d in designs), default=None),
        "return_hinted": mean_or_none([p.total_return for p in hinted]),
        "return_unhinted": mean_or_none([p.total_return for p in unhinted]),
        "solve_rate_hinted": mean_or_none([d.score.solve_rate_hinted for d in valid
                                           if d.score.solve_rate_hinted is not None]),
        "solve_rate_unhinted": mean_or_none([d.score.solve_rate_unhinted for d in valid
                                             if d.score.solve_rate_unhinted is not None]),
        "diversity_score": mean_or_none([x["diversity_score"] for x in diversity
                                         if x.get("diversity_score") is not None]),
        "near_duplicate_rate": mean_or_none([x["near_duplicate_rate"] for x in diversity
                                             if "near_duplicate_rate" in x]),
    }


def _timing(results: Sequence[TicketResult]) -> dict[str, float]:
    def total(*keys: str) -> float:
        return sum(float(r.timing.get(k, 0.0)) for r in results for k in keys)

    return {
        "generation_s": total("designer_generation_s", "hint_generation_s",
                              "agent_generation_s"),
        "environment_s": total("env_steps_s", "env_load_s", "env_s"),
        "validation_s": total("validation_s"),
        "bookkeeping_s": total("diversity_s", "bookkeeping_s"),
    }


def step_metrics(step: int, pool: EnvPool, pool_changed: bool,
                 results: Sequence[TicketResult], rollout_s: float) -> dict[str, Any]:
    """The rollout half of a step's line (the backend adds ``train`` and update timing)."""
    samples = [s for r in results for s in r.samples]
    designer_tickets = sum(1 for r in results if r.ticket.role is Role.DESIGNER)
    out: dict[str, Any] = {
        "step": step,
        "pool": {"generation": pool.generation, "size": len(pool.envs),
                 "regenerated": pool_changed,
                 "kept": bool(designer_tickets) and not pool_changed,
                 "by_origin": pool.by_origin()},
        "agent": _agent(results),
        "designer": _designer(results),
        "zero_variance": {"designer": with_group_stats(results, Role.DESIGNER).to_json(),
                          "agent": with_group_stats(results, Role.AGENT).to_json()},
        "tokens": {
            "designer": sum(s.trained_tokens for s in samples if s.role is Role.DESIGNER),
            "agent": sum(s.trained_tokens for s in samples if s.role is Role.AGENT),
            "masked": sum(len(s.env_mask) - s.trained_tokens for s in samples),
            "prompt": sum(len(s.prompt_ids) for s in samples),
        },
        "timing_s": {**_timing(results), "rollout_s": rollout_s},
    }
    return dict(round_floats(out))


def flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """``(a/b/c, number)`` for every finite number in a nested metrics line."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, int | float):  # bools included
            yield name, float(value)
        elif isinstance(value, Mapping):
            yield from flatten(value, name + "/")
