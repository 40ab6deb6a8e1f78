"""Hostile replies in a training pool: each is one environment's fault, never the batch's.

Environments whose replies no policy can take (a lone surrogate, a reward of 10**400, an
unconvertible success threshold, tool schemas of any size) end their own episodes as
``env_error``; the valid environments played next to them in the SAME pool (the training
loop's ``HandlePool``, instances reused) play exactly as they do alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _episode_agents import CountingPolicy, bisect_agent

from spade.cycle._pool import HandlePool
from spade.envs import load_example_source
from spade.episodes import EpisodeJob, StopReason, Trajectory, run_episodes
from spade.policy import SamplingParams
from spade.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.bwrap
PARAMS = SamplingParams(max_new_tokens=256)

GAME = '''
from spade.envs import TextEnv


class OddEnv(TextEnv):
    max_turns = 4
    {attrs}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return {first}, {{}}

    def step(self, action):
        return {reply}
'''
TOOLS = '''
from spade.envs import ToolEnv, tool


class OddToolEnv(ToolEnv):
    max_turns = 4

    @classmethod
    def tools(cls):
        specs = super().tools()
        specs[0]["function"]["parameters"]["required"] = {required}
        return specs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return "Read the box, then answer.", {{}}

    @tool
    def read(self, box: str) -> str:
        """Read a box."""
        return {result}

    def check(self):
        return 0.0
'''
HOSTILE = {
    "surrogate_first": GAME.format(attrs="", first='"Guess \\ud800"',
                                   reply='"no", 0.0, False, False, {}'),
    "surrogate_step": GAME.format(attrs="", first='"Guess"',
                                  reply='"no \\udfff", 0.0, False, False, {}'),
    "huge_reward": GAME.format(attrs="", first='"Guess"', reply='"rich", 10**400, True, False, {}'),
    "big_reward": GAME.format(attrs="", first='"Guess"', reply='"rich", 1e300, False, False, {}'),
    "huge_threshold": GAME.format(attrs="success_threshold = 10**400", first='"Guess"',
                                  reply='"no", 0.0, True, False, {}'),
    "huge_schema": TOOLS.format(required="[i if i % 2 else [i] for i in range(40_000)]",
                                result='"1"'),
    "surrogate_tool": TOOLS.format(required='["box"]', result='"\\ud800"'),
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(isolation="bwrap", limits=SandboxLimits(call_timeout_s=2.0)) as box:
        yield box


def _agent(messages):
    text = str(messages[-1]["content"])
    if "Read the box" in text:
        return '<tool_call>{"name": "read", "arguments": {"box": "a"}}</tool_call>'
    return bisect_agent(messages)


def _play(sandbox: Sandbox, jobs: list[EpisodeJob]) -> list[Trajectory]:
    sources = {env_id: HOSTILE.get(env_id) or load_example_source(env_id)
               for env_id in {j.env_id for j in jobs}}
    with HandlePool(sandbox, sources) as pool:
        return run_episodes(CountingPolicy(_agent), jobs, pool, PARAMS)


def _same_play(a: Trajectory, b: Trajectory) -> bool:
    return (a.token_ids, a.rewards, a.stop_reason, a.env_fault) == (
        b.token_ids, b.rewards, b.stop_reason, b.env_fault)


@pytest.mark.parametrize("env_id", sorted(HOSTILE))
def test_a_hostile_reply_is_that_episodes_env_error(sandbox: Sandbox, env_id: str) -> None:
    (t,) = _play(sandbox, [EpisodeJob(env_id, 5)])
    assert t.stop_reason is StopReason.ENV_ERROR, (t.stop_reason, t.env_fault)
    assert t.env_fault and not t.agent_trainable
    t.env_fault.encode("utf-8")  # storable as it is


def test_hostile_envs_in_a_training_pool_do_not_change_valid_plays(sandbox: Sandbox) -> None:
    valid = [EpisodeJob("number_guess", seed) for seed in (3, 4, 5)]
    alone = _play(sandbox, valid)
    assert all(t.stop_reason is StopReason.WON for t in alone)
    mixed: list[EpisodeJob] = []
    for k, job in enumerate(valid * 2):
        mixed += [job, EpisodeJob(sorted(HOSTILE)[k % len(HOSTILE)], k)]
    together = _play(sandbox, mixed)
    played = [t for t in together if t.env_id == "number_guess"]
    assert all(_same_play(a, b) for a, b in zip(alone * 2, played, strict=True))
    assert all(t.stop_reason is StopReason.ENV_ERROR
               for t in together if t.env_id != "number_guess")
