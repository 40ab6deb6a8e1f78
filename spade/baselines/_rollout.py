"""One step of a fixed-environment baseline: G plays of each problem, GRPO per problem.

Backend independent: a trainer hands over its token-level policy and gets back, per
problem, the trajectories with their rewards and advantages; the problem source hears the
outcomes (the difficulty windows move) before the step's metrics are taken. Only the agent
role trains; plays run unhinted through the same play function as a SPADE rollout's agent
tickets (:func:`spade.cycle.play_groups`), the problem source giving the sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spade.baselines._problems import Problem, ProblemSource
from spade.cycle import play_groups
from spade.cycle._metrics import counts, mean_or_none, round_floats
from spade.episodes import EpisodeConfig, EpisodeJob, StopReason, Trajectory
from spade.policy import SamplingParams, TokenPolicy
from spade.rewards import GroupStats
from spade.sandbox import Sandbox


@dataclass(frozen=True)
class Group:
    """The G plays of one problem: their returns (what each play scored, also in a group
    that trains on nothing) and their advantages, None when they carry no gradient."""

    problem: Problem
    trajectories: tuple[Trajectory, ...]
    returns: tuple[float, ...]
    advantages: tuple[float, ...] | None


@dataclass(frozen=True)
class StepPlays:
    groups: tuple[Group, ...]
    stats: GroupStats
    timing: dict[str, float]


def play_step(policy: TokenPolicy, sandbox: Sandbox, problems: ProblemSource,
              drawn: Sequence[Problem], group_size: int, params: SamplingParams,
              episode: EpisodeConfig) -> StepPlays:
    """Play every drawn problem ``group_size`` times and score the groups.

    A group with an environment fault gets no gradient and is not shown to the problem
    source (a broken environment says nothing about the agent's level).
    """
    jobs = [[EpisodeJob(p.env_id, p.seed, sample=j) for j in range(group_size)] for p in drawn]
    plays = play_groups(policy, sandbox, problems.source, jobs, params, episode)
    groups = []
    for problem, played in zip(drawn, plays.groups, strict=True):
        if played.advantages is not None:
            problems.observe(problem, [t.won for t in played.trajectories])
        groups.append(Group(problem, played.trajectories, played.returns, played.advantages))
    return StepPlays(tuple(groups), plays.stats, plays.timing)


def source_step_metrics(step: int, problems: ProblemSource, plays: StepPlays,
                 extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The step's metrics under the names self-play uses, plus the source's own."""
    trajectories = [t for g in plays.groups for t in g.trajectories]
    per_env: dict[str, list[bool]] = {}
    for t in trajectories:
        per_env.setdefault(t.env_id, []).append(t.won)
    metrics: dict[str, Any] = {
        "step": step,
        "fixed_env": problems.name,
        "counts": {
            "problems": len(plays.groups), "episodes": len(trajectories),
            "env_steps": int(plays.timing.get("env_steps", 0)),
            "env_loads": int(plays.timing.get("env_loads", 0)),
            "agent_tokens": sum(t.agent_tokens for t in trajectories),
        },
        "solve_rate_unhinted": mean_or_none([float(t.won) for t in trajectories]),
        "mean_return_unhinted": mean_or_none([t.total_return for t in trajectories]),
        "solve_rate_by_env": {e: sum(w) / len(w) for e, w in sorted(per_env.items())},
        "stop_reasons": {"unhinted": counts((str(t.stop_reason) for t in trajectories),
                                            [str(r) for r in StopReason])},
        "zero_variance": {"agent": plays.stats.to_json()},
        **problems.metrics(),
        "timing_s": {k: v for k, v in plays.timing.items() if k.endswith("_s")},
    }
    if extra:
        metrics.update(extra)
    return round_floats(metrics)
