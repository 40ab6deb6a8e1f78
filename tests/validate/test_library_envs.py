"""Environments that wrap installed task libraries validate inside the real sandbox.

The fixed-environment baselines wrap Reasoning Gym and RLVE (``rlve-gym``, import name
``Gym``) generators, and designers import libraries too. What those libraries do while
being imported (torch reading ``/proc/self/maps``, matplotlib's config directory and font
scan) belongs to the import, not to the environment; the fork server preloads them so a
load does not pay their import time.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator

import pytest

from spade.sandbox import Sandbox, SandboxLimits
from spade.validate import Stage, ValidationConfig, validate_env

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

RG_ENV = '''
import re
import reasoning_gym
from spade.envs import TextEnv


class ArithmeticEnv(TextEnv):
    """One Reasoning Gym basic_arithmetic question per seed."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.data = reasoning_gym.create_dataset("basic_arithmetic", size=1, seed=seed or 0)
        self.item = self.data[0]
        return self.item["question"] + " Answer in \\\\boxed{}.", {}

    def step(self, action):
        found = re.findall(r"\\\\boxed\\{([^}]*)\\}", action)
        answer = found[-1] if found else action
        score = float(self.data.score_answer(answer.strip(), self.item))
        return "done", score, True, False, {"correct": score >= 1.0}

    def solution(self):
        return ["\\\\boxed{" + str(self.item["answer"]) + "}"]
'''

RLVE_ENV = '''
import random
from Gym.environments import AdditionTable_Environment
from spade.envs import TextEnv


class AdditionTableEnv(TextEnv):
    """RLVE's unknown-base addition table, three to five digits per seed."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        n = random.Random(seed).randint(3, 5)
        self.task = AdditionTable_Environment()
        assert self.task.generator(seed or 0, {"N": n}, timeout_second=5)
        return self.task.prompt_generator(), {}

    def step(self, action):
        score = float(self.task.verifier("<answer>" + action + "</answer>")["accuracy"])
        return "done", score, True, False, {}

    def solution(self):
        return [self.task.parameter["reference_answer"]]
'''


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    limits = SandboxLimits(call_timeout_s=10.0, load_timeout_s=20.0)
    with Sandbox(limits=limits, preload=("reasoning_gym", "Gym", "textarena")) as box:
        yield box


@pytest.mark.parametrize(
    ("module", "source"), [("reasoning_gym", RG_ENV), ("Gym", RLVE_ENV)], ids=["rg", "rlve"]
)
def test_a_library_task_validates_like_an_inline_one(
    sandbox: Sandbox, module: str, source: str
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    verdict = validate_env(source, sandbox=sandbox, config=ValidationConfig(time_budget_s=60))
    assert verdict.valid and verdict.stage == Stage.DONE, (str(verdict.stage), verdict.reason)


def test_only_allowlisted_libraries_are_preloaded() -> None:
    with pytest.raises(ValueError, match="cannot preload"):
        Sandbox(preload=("os",))


TEXTARENA_ENV = '''
import textarena as ta
from spade.envs import TextEnv


class GuessEnv(TextEnv):
    """TextArena's hardcore number guess (1 to 50 in 10 turns), won only by the number."""

    max_turns = 10

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.game = ta.make("GuessTheNumber-v0-hardcore")
        self.game.reset(num_players=1, seed=seed or 0)
        inner = self.game
        while hasattr(inner, "env"):
            inner = inner.env
        self.target = inner.game_number
        return self.game.get_observation()[1], {}

    def step(self, action):
        text = action.strip()
        done, _ = self.game.step(text if text.startswith("[") else f"[{text}]")
        won = text.strip("[]") == str(self.target)
        observation = self.game.get_observation()[1][-300:]
        return observation, float(won), bool(done or won), False, {}
'''


def test_a_textarena_game_plays_in_the_sandbox_without_violations(sandbox: Sandbox) -> None:
    if importlib.util.find_spec("textarena") is None:
        pytest.skip("textarena is not installed")
    with sandbox.load(TEXTARENA_ENV) as env:
        first, _ = env.reset(seed=3)
        assert "Guess The Number" in first
        result = env.step("25")
        assert result[1] in (0.0, 1.0) and env.violations == ()
        assert env.finalize() == ()
