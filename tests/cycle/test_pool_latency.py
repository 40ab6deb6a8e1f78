"""Training instances see the hint audit's latencies, not the agent's: with
``answer_delays`` each instance's calls arrive a delay drawn from that range after the
previous call returned, whatever the agent took, so a password gated on latency opens in
training no more often than the audit, which answers with delays from the same ranges,
sees it open."""

from __future__ import annotations

import time

import pytest

from spade.cycle._pool import HandlePool
from spade.sandbox import Sandbox

pytestmark = pytest.mark.bwrap
LATENCY = '''
import time
from spade.envs import TextEnv


class WaitEnv(TextEnv):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.since = time.monotonic()
        return "Answer when ready.", {}

    def step(self, action):
        return repr(time.monotonic() - self.since), 0.0, True, False, {}
'''


def _latencies(sandbox: Sandbox, seed: int, wait_s: float) -> list[float]:
    """What three instances of one pool see between ``reset`` and ``step``."""
    with HandlePool(sandbox, {"env": LATENCY}, answer_delays=(1.5, 60.0), seed=seed) as pool:
        handles = [pool.acquire("env") for _ in range(3)]
        seen = []
        for handle in handles:
            handle.reset(seed=1)
            time.sleep(wait_s)  # the agent thinking: not what the instance sees
            seen.append(float(handle.step("x")[0]))
        for handle in handles:
            pool.release("env", handle, broken=False)
    return seen


def test_each_instance_sees_a_drawn_latency_not_the_agents(sandbox: Sandbox) -> None:
    first = _latencies(sandbox, seed=7, wait_s=0.0)
    again = _latencies(sandbox, seed=7, wait_s=2.0)
    other = _latencies(sandbox, seed=8, wait_s=0.0)
    # in the range (plus the time inside two calls), one draw per instance
    assert all(1.5 <= s < 62.0 for s in first + again + other), (first, again, other)
    assert len({round(s) for s in first}) == 3
    # the same seed draws the same delays, whether the agent answered at once or after
    # 2 s; another seed draws others
    assert all(abs(a - b) < 1.0 for a, b in zip(first, again, strict=True)), (first, again)
    assert any(abs(a - b) > 1.0 for a, b in zip(first, other, strict=True)), (first, other)


NAMED = '''
from spade.envs import TextEnv


class WhereEnv(TextEnv):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return f"{__file__}|{__name__}|{type(self).step.__code__.co_filename}", {}

    def step(self, action):
        return "done", 0.0, True, False, {}
'''


def test_a_training_instance_has_the_validated_modules_names(sandbox: Sandbox) -> None:
    """Nothing in its own module tells a training instance from a validated one (whose
    worker the validator loads with the sandbox's default name)."""
    validated = sandbox.load(NAMED)
    try:
        seen_in_validation = validated.reset(seed=1)[0]
    finally:
        validated.close()
    with HandlePool(sandbox, {"c0007-p00-d01": NAMED}, answer_delays=(1.5, 60.0)) as pool:
        handle = pool.acquire("c0007-p00-d01")
        seen_in_training = handle.reset(seed=1)[0]
        pool.release("c0007-p00-d01", handle, broken=False)
    assert seen_in_training == seen_in_validation
    assert "c0007" not in seen_in_training
