"""Valid environments round-trip through the bwrap sandbox with the conversion rules."""

from __future__ import annotations

import math

import pytest
from _sandbox_envs import env_source

from spade.envs.examples import list_examples
from spade.sandbox import EnvFault, FaultKind, Opaque, Sandbox


@pytest.mark.parametrize("example", list_examples(), ids=lambda e: e.name)
def test_examples_play_their_solution(sandbox: Sandbox, example) -> None:
    with sandbox.load(example.source(), filename=f"{example.name}.py") as env:
        assert env.info.kind == example.kind
        assert env.info.has_solution
        obs, info = env.reset(seed=7)
        assert isinstance(obs, str) and obs and isinstance(info, dict)
        plan = env.solution()
        total = 0.0
        for move in plan:
            if isinstance(move, dict):
                assert isinstance(env.call_tool(move["name"], move["arguments"]), str)
                continue
            _, reward, terminated, truncated, _ = env.step(move)
            total += reward
            if terminated or truncated:
                break
        assert total >= env.info.success_threshold
        assert env.violations == ()
        if example.kind == "tool":
            assert env.info.tools and all("function" in t or "name" in t for t in env.info.tools)


def test_conversion_rules(sandbox: Sandbox) -> None:
    src = env_source(
        module="import numpy as np\nclass Name(str):\n    pass\n",
        obs="self.payload()",
    ) + (
        "    def payload(self):\n"
        "        return ((1, [2, 3]), {1: np.float32(0.5), 'b': np.bool_(True)},"
        " np.int64(4), float('nan'), float('inf'), {3}, np.zeros(2), Name('x'), None)\n"
    )
    with sandbox.load(src) as env:
        obs, info = env.reset(seed=0)
    (pair, mapping, i64, nan, inf, a_set, array, name, none) = obs
    assert pair == (1, [2, 3]) and isinstance(pair, tuple) and isinstance(pair[1], list)
    assert mapping == {"1": 0.5, "b": True} and type(mapping["b"]) is bool
    assert type(i64) is int and i64 == 4
    assert math.isnan(nan) and inf == math.inf
    assert isinstance(a_set, Opaque) and a_set.type_name == "set" and a_set.text == "{3}"
    assert isinstance(array, Opaque) and array.type_name == "ndarray"
    assert type(name) is str and name == "x"
    assert none is None and info == {}


def test_step_reward_and_flags_keep_python_types(sandbox: Sandbox) -> None:
    src = env_source(module="import numpy as np")
    src = src.replace("'done', 1.0, True, False", "'done', np.float64(0.25), np.bool_(True), False")
    with sandbox.load(src) as env:
        env.reset(seed=1)
        obs, reward, terminated, truncated, info = env.step("a")
    assert (obs, reward, terminated, truncated, info) == ("done", 0.25, True, False, {})
    assert type(reward) is float and type(terminated) is bool


def test_reset_is_called_by_keyword_and_options_arrive(sandbox: Sandbox) -> None:
    src = env_source(obs="repr((seed, options))").replace(
        "def reset(self, seed=None, options=None)", "def reset(self, *, seed=None, options=None)"
    )
    with sandbox.load(src) as env:
        assert env.reset(seed=5, options={"k": [1, (2, 3)]})[0] == "(5, {'k': [1, (2, 3)]})"


def test_env_exception_names_the_env_line(sandbox: Sandbox) -> None:
    with sandbox.load(env_source(step="x = {}['missing']")) as env:
        env.reset(seed=0)
        with pytest.raises(EnvFault) as caught:
            env.step("a")
        assert caught.value.kind == FaultKind.EXCEPTION
        assert "KeyError" in caught.value.message and "line" in caught.value.message
        assert env.reset(seed=0)[0] == "obs"  # the worker survives an exception


def test_load_errors_are_load_faults(sandbox: Sandbox) -> None:
    cases = {
        "def broken(:\n": "SyntaxError",
        "from spade.envs import TextEnv\nclass Helper: pass\n": "found 0",
        env_source() + "\nclass OtherEnv(ProbeEnv):\n    pass\n": "found 2",
        "from spade.envs import TextEnv\nraise ValueError('nope')\n": "ValueError: nope",
        env_source().replace("class ProbeEnv(TextEnv):", "class ProbeEnv(TextEnv):\n"
                             "    def __init__(self, size):\n        pass\n"): "ProbeEnv()",
    }
    for source, needle in cases.items():
        with pytest.raises(EnvFault) as caught:
            sandbox.load(source)
        assert caught.value.kind == FaultKind.LOAD, source
        assert needle in caught.value.message, caught.value.message


def test_imported_env_classes_do_not_count(sandbox: Sandbox) -> None:
    src = "from spade.envs import TextEnv, ToolEnv\n" + env_source().split("\n", 1)[1]
    with sandbox.load(src) as env:
        assert env.info.class_name == "ProbeEnv" and env.info.kind == "game"
        assert not env.info.has_solution


def test_hash_seed_changes_set_order_between_workers(sandbox: Sandbox) -> None:
    src = env_source(obs="' '.join(set('alpha beta gamma delta epsilon zeta eta theta'.split()))")
    orders = set()
    for seed in (0, 1, 2):
        with sandbox.load(src, hash_seed=seed) as env:
            orders.add(env.reset(seed=0)[0])
    assert len(orders) > 1


def test_output_is_captured_and_capped(sandbox: Sandbox) -> None:
    with sandbox.load(env_source(reset="print('hello from env')")) as env:
        env.reset(seed=0)
        assert "hello from env" in env.output


def test_calls_after_close_fail(sandbox: Sandbox) -> None:
    env = sandbox.load(env_source())
    env.close()
    with pytest.raises(EnvFault, match="worker is gone"):
        env.reset(seed=0)


def test_generic_call_is_whitelisted(sandbox: Sandbox) -> None:
    src = env_source() + "    def check(self):\n        return 0.5\n"
    with sandbox.load(src) as env:
        assert env.call("check") == 0.5
        with pytest.raises(ValueError):
            env.call("__init__")


@pytest.mark.parametrize("spin_us", [0, 100])
def test_a_worker_between_calls_uses_no_cpu(spin_us: int) -> None:
    """Polling for the next request is bounded: an idle worker blocks, whatever the
    setting, and both settings serve the same answers."""
    import os
    import time
    from dataclasses import replace

    from _sandbox_procs import FAST_LIMITS, cpu_seconds, descendants

    example = next(e for e in list_examples() if e.name == "number_guess")
    with Sandbox("bwrap", replace(FAST_LIMITS, spin_us=spin_us)) as box, \
            box.load(example.source()) as env:
        obs, _ = env.reset(seed=3)
        env.step(env.solution()[0])
        time.sleep(0.05)
        procs = descendants(os.getpid())
        before = sum(cpu_seconds(p) for p in procs)
        time.sleep(0.5)
        used = sum(cpu_seconds(p) for p in procs) - before
        assert used < 0.1, f"{used:.3f} s of CPU in 0.5 s while idle"
        assert env.reset(seed=3)[0] == obs


def test_hostile_values_become_faults_of_that_environment(sandbox: Sandbox) -> None:
    """A lone surrogate in an observation is a protocol fault (never a string a tokenizer
    chokes on), a reward of 10**400 arrives as an Opaque (never an int ``float()`` cannot
    take), and the next environment plays normally."""
    surrogate = env_source(obs="'caf\\udc80'")
    with sandbox.load(surrogate) as env, pytest.raises(EnvFault) as fault:
        env.reset(seed=0)
    assert fault.value.kind == FaultKind.PROTOCOL and "UTF-8" in str(fault.value)
    huge = env_source(step="return 'obs', 10**400, True, False, {'n': 10**20}")
    with sandbox.load(huge) as env:
        env.reset(seed=0)
        _, reward, _, _, info = env.step("x")
    assert isinstance(reward, Opaque) and reward.type_name == "int", reward
    assert info == {"n": 10**20}
    with sandbox.load(env_source()) as env:
        assert env.reset(seed=0)[0] == "obs"
