"""Hostile and odd environments: faults end the episode and are blamed on the designer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _episode_agents import CountingPolicy, bisect_agent

from spade.envs import load_example_source
from spade.episodes import ENV_FAULT_REASONS, EpisodeJob, StopReason, run_episodes
from spade.policy import SamplingParams
from spade.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.bwrap
PARAMS = SamplingParams(max_new_tokens=64)

HEADER = '''
from spade.envs import TextEnv


class OddEnv(TextEnv):
    max_turns = 6

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = 0
        return "Say a number in \\\\boxed{}.", {}

    def step(self, action):
        self.n += 1
'''
SOURCES = {
    "raises": HEADER + '''        if self.n == 2:
            raise ZeroDivisionError("boom")
        return "again", 0.0, False, False, {}
''',
    "exits": HEADER + '''        import os
        os._exit(3)
''',
    "loops": HEADER + '''        while True:
            pass
''',
    "nan": HEADER + '''        return "hm", float("nan"), False, False, {}
''',
    "truncates": HEADER + '''        text = "time is up" if self.n == 2 else "again"
        return text, 0.25, False, self.n == 2, {}
''',
    "partial_win": HEADER + '''        return "done", 0.5, self.n == 2, False, {}
''',
    "no_env_class": "x = 1\n",
    "network": HEADER + '''        import socket
        socket.socket().connect(("127.0.0.1", 80))
        return "sent", 0.0, False, False, {}
''',
}


@pytest.fixture(scope="module")
def quick_sandbox() -> Iterator[Sandbox]:
    sb = Sandbox(isolation="bwrap", limits=SandboxLimits(call_timeout_s=0.5))
    yield sb
    close = getattr(sb, "close", None)
    if close is not None:
        close()


class Provider:
    """A provider that records what it hands out and how it gets it back."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.released: list[tuple[str, bool]] = []
        self.acquired = 0

    def acquire(self, env_id: str):
        self.acquired += 1
        if env_id in SOURCES:
            return self.sandbox.load(SOURCES[env_id])
        return self.sandbox.load(load_example_source(env_id))

    def release(self, env_id: str, handle, *, broken: bool) -> None:
        self.released.append((env_id, broken))
        handle.close()


def _play(sandbox: Sandbox, env_id: str, agent=lambda m: "\\boxed{1}"):
    provider = Provider(sandbox)
    policy = CountingPolicy(agent)
    (t,) = run_episodes(policy, [EpisodeJob(env_id, 0)], provider, PARAMS)
    return t, provider


def test_exception_in_step_is_an_env_error(quick_sandbox: Sandbox) -> None:
    t, provider = _play(quick_sandbox, "raises")
    assert t.stop_reason is StopReason.ENV_ERROR and t.stop_reason in ENV_FAULT_REASONS
    assert t.num_turns == 2 and t.rewards == (0.0, 0.0)
    assert t.env_fault is not None and "boom" in t.env_fault and not t.agent_trainable
    assert t.turns[1].feedback == () and t.turns[1].end == len(t.token_ids)
    assert provider.released == [("raises", True)]


def test_worker_exit_is_an_env_error(quick_sandbox: Sandbox) -> None:
    t, _ = _play(quick_sandbox, "exits")
    assert t.stop_reason is StopReason.ENV_ERROR and t.num_turns == 1 and t.env_fault


def test_endless_step_is_a_timeout(quick_sandbox: Sandbox) -> None:
    t, provider = _play(quick_sandbox, "loops")
    assert t.stop_reason is StopReason.TIMEOUT and t.env_fault.startswith("timeout")
    assert provider.released == [("loops", True)]


def test_network_attempt_is_an_env_error_naming_the_violation(quick_sandbox: Sandbox) -> None:
    t, provider = _play(quick_sandbox, "network")
    assert t.stop_reason is StopReason.ENV_ERROR and t.num_turns == 1
    assert t.env_fault.startswith("violation: network")
    assert provider.released == [("network", True)]


def test_non_finite_reward_is_an_env_error(quick_sandbox: Sandbox) -> None:
    t, _ = _play(quick_sandbox, "nan")
    assert t.stop_reason is StopReason.ENV_ERROR and t.num_turns == 1
    assert t.env_fault == "protocol: step returned a non-finite reward nan"


def test_load_failure_gives_an_empty_env_error(quick_sandbox: Sandbox) -> None:
    t, provider = _play(quick_sandbox, "no_env_class")
    assert t.stop_reason is StopReason.ENV_ERROR and t.num_turns == 0 and t.token_ids == ()
    assert provider.released == []  # nothing was handed out


def test_truncation_and_partial_credit(quick_sandbox: Sandbox) -> None:
    t, provider = _play(quick_sandbox, "truncates")
    assert t.stop_reason is StopReason.TRUNCATED and t.num_turns == 2
    assert t.total_return == 0.5 and not t.won and t.env_fault is None
    assert provider.released == [("truncates", False)]
    partial, _ = _play(quick_sandbox, "partial_win")
    assert partial.stop_reason is StopReason.WON and partial.total_return == 1.0


def test_a_faulty_env_does_not_disturb_the_batch(quick_sandbox: Sandbox) -> None:
    provider = Provider(quick_sandbox)
    policy = CountingPolicy(bisect_agent)
    jobs = [EpisodeJob("number_guess", 0), EpisodeJob("raises", 0), EpisodeJob("number_guess", 1)]
    out = run_episodes(policy, jobs, provider, PARAMS)
    assert [t.stop_reason for t in out] == [StopReason.WON, StopReason.ENV_ERROR, StopReason.WON]
    assert [len(c) for c in policy.calls][:2] == [3, 3] and len(policy.calls[2]) == 2
    assert sorted(provider.released) == [
        ("number_guess", False), ("number_guess", False), ("raises", True)
    ]
