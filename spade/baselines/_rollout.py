"""One step of a fixed-environment baseline: G plays of each problem, GRPO per problem.

Backend independent: a trainer hands over its token-level policy and gets back, per
problem, the trajectories with their rewards and advantages; the problem source hears the
outcomes (the difficulty windows move) before the step's metrics are taken. Only the agent
role trains; plays run unhinted through the same sandbox and episode runner as self-play.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spade.baselines._problems import Problem, ProblemSource
from spade.cycle._metrics import counts, mean_or_none, round_floats
from spade.cycle._pool import HandlePool
from spade.episodes import EpisodeConfig, EpisodeJob, StopReason, Trajectory, run_episodes
from spade.policy import SamplingParams, TokenPolicy
from spade.rewards import GroupStats, grouped_advantages
from spade.sandbox import EnvHandle, Sandbox


class SourcePool(HandlePool):
    """A handle pool whose sources come from a problem source on first use."""

    def __init__(self, sandbox: Sandbox, problems: ProblemSource) -> None:
        super().__init__(sandbox, {})
        self._problems = problems

    def acquire(self, env_id: str) -> EnvHandle:
        if env_id not in self._sources:
            self._sources[env_id] = self._problems.source(env_id)
        return super().acquire(env_id)


@dataclass(frozen=True)
class Group:
    """The G plays of one problem; ``advantages`` is None when they carry no gradient."""

    problem: Problem
    trajectories: tuple[Trajectory, ...]
    rewards: tuple[float, ...]
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
    jobs = [EpisodeJob(p.env_id, p.seed, sample=j) for p in drawn for j in range(group_size)]
    began = time.perf_counter()
    with SourcePool(sandbox, problems) as pool:
        trajectories = run_episodes(policy, jobs, pool, params, episode)
        timing = {"env_steps_s": pool.env_seconds, "env_load_s": pool.load_seconds,
                  "env_steps": float(pool.env_steps), "env_loads": float(pool.loads)}
    timing["play_s"] = time.perf_counter() - began
    timing["agent_generation_s"] = max(
        0.0, timing["play_s"] - timing["env_steps_s"] - timing["env_load_s"])
    rewards: dict[int, list[float]] = {}
    faulted: set[int] = set()
    for i, _ in enumerate(drawn):
        group = trajectories[i * group_size:(i + 1) * group_size]
        if any(t.env_fault for t in group):
            faulted.add(i)
        rewards[i] = [t.total_return for t in group]
    adv = grouped_advantages({i: r for i, r in rewards.items() if i not in faulted})
    groups = []
    for i, problem in enumerate(drawn):
        plays = tuple(trajectories[i * group_size:(i + 1) * group_size])
        if i not in faulted:
            problems.observe(problem, [t.won for t in plays])
        advantages = None if i in faulted else tuple(adv.advantages[i])
        groups.append(Group(problem, plays, tuple(rewards[i]), advantages))
    stats = GroupStats(len(drawn), len(trajectories), adv.stats.n_zero_variance + len(faulted))
    return StepPlays(tuple(groups), stats, timing)


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
