"""Every turn of every play samples with its own seed (per request, not per batch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _episode_agents import bisect_agent

from spade.episodes import EpisodeJob, run_episodes
from spade.policy import Generation, SamplingParams, ScriptedPolicy


class SeedRecorder(ScriptedPolicy):
    def __init__(self, respond: Any) -> None:
        super().__init__(respond)
        self.seeds: list[list[int | None]] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: Any) -> list[Generation]:
        assert not isinstance(params, SamplingParams) and len(params) == len(prompts)
        self.seeds.append([p.seed for p in params])
        return super().generate(prompts, params)


def test_plays_arms_and_turns_have_distinct_seeds(examples) -> None:
    policy = SeedRecorder(bisect_agent)
    jobs = [EpisodeJob("number_guess", 0, "Bisect."), EpisodeJob("number_guess", 0, None),
            EpisodeJob("number_guess", 1, None)]
    params = SamplingParams(max_new_tokens=64, seed=7)
    first = run_episodes(policy, jobs, examples, params)
    assert len(policy.seeds) > 1  # several turns
    flat = [s for step in policy.seeds for s in step]
    assert len(set(flat)) == len(flat)  # no two requests share a seed
    again = SeedRecorder(bisect_agent)
    assert [t.token_ids for t in run_episodes(again, jobs, examples, params)] == [
        t.token_ids for t in first]
    assert again.seeds == policy.seeds  # the same run draws the same seeds
