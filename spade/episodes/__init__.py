"""Agent episodes: a token-level policy plays sandboxed environments.

Typical use in a cycle::

    jobs = [j for env in pool for j in matched_jobs(env.id, env.hint, seeds)]
    trajectories = run_episodes(policy, jobs, lambda env_id: sandbox.load(sources[env_id]),
                                SamplingParams(max_new_tokens=512))
"""

from __future__ import annotations

from spade.episodes._prompts import first_observation, system_prompt
from spade.episodes._provider import EnvProvider, FreshHandles, HandleFactory
from spade.episodes._replies import env_facts
from spade.episodes._runner import matched_jobs, play_matched, run_episodes, split_arms
from spade.episodes._types import (
    DEFAULT_MAX_TURNS,
    ENV_FAULT_REASONS,
    EpisodeConfig,
    EpisodeJob,
    StopReason,
    Trajectory,
    Turn,
)

__all__ = [
    "DEFAULT_MAX_TURNS",
    "ENV_FAULT_REASONS",
    "EnvProvider",
    "EpisodeConfig",
    "EpisodeJob",
    "FreshHandles",
    "HandleFactory",
    "StopReason",
    "Trajectory",
    "Turn",
    "env_facts",
    "first_observation",
    "matched_jobs",
    "play_matched",
    "run_episodes",
    "split_arms",
    "system_prompt",
]
