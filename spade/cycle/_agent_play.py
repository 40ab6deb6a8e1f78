"""Agent training plays: GRPO groups of unhinted episodes, whatever the problem source.

A trainer's agent tickets each name one environment and how its group's plays differ: a
SPADE rollout plays a pool environment (designed, or a bundled starter) on a reset seed per
play; a fixed-environment baseline plays one drawn problem (RLVE, Reasoning Gym, a static
pool, the starter families) on ONE seed with a sampling stream per play. Both come here:
the environments' sources are looked up by id (``sources``), every play runs through one
episode runner and one handle pool, and each group is scored as GRPO scores it. A group
with an environment fault gets no gradient (the environment's fault, not the agent's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from spade.cycle._pool import HandlePool
from spade.episodes import EpisodeConfig, EpisodeJob, Trajectory, run_episodes
from spade.policy import SamplingParams, TokenPolicy
from spade.rewards import GroupStats, grouped_advantages
from spade.sandbox import Sandbox

__all__ = ["AgentPlays", "PlayedGroup", "play_groups"]


@dataclass(frozen=True)
class PlayedGroup:
    """One group's plays, their returns, and their advantages (None: a play faulted)."""

    trajectories: tuple[Trajectory, ...]
    returns: tuple[float, ...]
    advantages: tuple[float, ...] | None

    @property
    def rewards(self) -> tuple[float, ...]:
        """What the group trains on: the returns, or zeros when a play faulted."""
        return self.returns if self.advantages is not None else (0.0,) * len(self.returns)

    @property
    def trained_advantages(self) -> tuple[float, ...]:
        return self.advantages or (0.0,) * len(self.returns)


@dataclass(frozen=True)
class AgentPlays:
    """Every group in order, the step's zero-variance accounting and its timing."""

    groups: tuple[PlayedGroup, ...]
    stats: GroupStats
    timing: dict[str, float]


def play_groups(policy: TokenPolicy, sandbox: Sandbox,
                sources: Mapping[str, str] | Callable[[str], str],
                groups: Sequence[Sequence[EpisodeJob]], params: SamplingParams,
                episode: EpisodeConfig) -> AgentPlays:
    """Play every group's jobs (one batch through the episode runner) and score each group.

    ``sources`` gives an environment's source by id (a mapping, or a callable asked on
    first use). Timing: ``play_s`` in all, ``env_steps_s``/``env_load_s`` inside the
    environments, ``agent_generation_s`` the rest, and the step and load counts.
    """
    jobs = [job for group in groups for job in group]
    began = time.perf_counter()
    with HandlePool(sandbox, sources) as pool:
        trajectories = run_episodes(policy, jobs, pool, params, episode)
        timing = {"env_steps_s": pool.env_seconds, "env_load_s": pool.load_seconds,
                  "env_steps": float(pool.env_steps), "env_loads": float(pool.loads)}
    timing["play_s"] = time.perf_counter() - began
    timing["agent_generation_s"] = max(
        0.0, timing["play_s"] - timing["env_steps_s"] - timing["env_load_s"])
    split: list[tuple[Trajectory, ...]] = []
    start = 0
    for group in groups:
        split.append(tuple(trajectories[start:start + len(group)]))
        start += len(group)
    faulted = {i for i, plays in enumerate(split) if any(t.env_fault for t in plays)}
    returns = {i: [t.total_return for t in plays] for i, plays in enumerate(split)}
    adv = grouped_advantages({i: r for i, r in returns.items() if i not in faulted})
    played = tuple(PlayedGroup(plays, tuple(returns[i]),
                               None if i in faulted else tuple(adv.advantages[i]))
                   for i, plays in enumerate(split))
    stats = GroupStats(len(split), len(trajectories), adv.stats.n_zero_variance + len(faulted))
    return AgentPlays(played, stats, timing)
