"""Every reference environment meets the environment contract (trusted code, in-process)."""

from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _env_play import TRIVIAL_ACTIONS, cls_solution, digest_all, play, random_policy, trivial_policy
from gymnasium.utils.env_checker import check_env

from spade.envs import (
    ExampleEnv,
    TextEnv,
    ToolEnv,
    get_example,
    list_examples,
    load_example_class,
    load_example_source,
    tool,
)
from spade.envs.examples import GAME_SKILLS, TOOL_SKILLS
from spade.errors import UserError

EXAMPLES = list_examples()
SEEDS = range(12)
ROOT = Path(__file__).resolve().parents[2]


def _ids(example: ExampleEnv) -> str:
    return example.name


every_example = pytest.mark.parametrize("example", EXAMPLES, ids=_ids)


def test_registry() -> None:
    kinds = [e.kind for e in EXAMPLES]
    assert kinds.count("game") >= 3 and kinds.count("tool") >= 3
    assert len({e.name for e in EXAMPLES}) == len(EXAMPLES)
    for example in EXAMPLES:
        assert example.skill in (GAME_SKILLS if example.kind == "game" else TOOL_SKILLS)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", example.hint) if s]
        assert 1 <= len(sentences) <= 3, example.hint
        assert get_example(example.name) == example
        assert load_example_source(example.name) == example.path.read_text(encoding="utf-8")
    with pytest.raises(UserError, match="unknown example environment 'nope'; known: number_guess"):
        get_example("nope")


def test_multi_turn_games_with_hidden_state() -> None:
    multi = [e for e in EXAMPLES if e.kind == "game" and load_example_class(e.name).max_turns > 1]
    assert len(multi) >= 2


@every_example
def test_source_shape(example: ExampleEnv) -> None:
    """One module like a generated env: one *Env class, stdlib + spade.envs, no global RNG."""
    source = example.source()
    assert len(source.splitlines()) <= 130
    tree = ast.parse(source)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env")]
    assert len(classes) == 1
    base = "ToolEnv" if example.kind == "tool" else "TextEnv"
    assert f"from spade.envs import {base}" in source
    allowed = {"__future__", "spade.envs", "typing", "re", "math", "itertools", "collections"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module in allowed, node.module
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= allowed, ast.dump(node)
        if isinstance(node, ast.Attribute):  # no module-level RNG
            assert node.attr not in ("seed",) and not (
                isinstance(node.value, ast.Name) and node.value.id in ("random", "np")
            )
        if isinstance(node, ast.Name):
            assert node.id not in ("set", "frozenset", "hash"), "hash-order dependence"
        assert not isinstance(node, ast.Set | ast.SetComp), "hash-order dependence"
    cls = load_example_class(example.name)
    assert cls.__name__ == classes[0]
    assert issubclass(cls, ToolEnv) == (example.kind == "tool")


@every_example
def test_contract_types_and_tool_schemas(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for seed in SEEDS:
        episode = play(cls(), seed, [], random_policy(random.Random(seed)))  # checks each step
        assert 0.0 <= episode.total <= 1.0
    if example.kind == "tool":
        assert issubclass(cls, ToolEnv)
        schemas = cls.tools()
        assert len(schemas) >= 2
        for schema in schemas:
            assert schema["type"] == "function"
            assert schema["function"]["description"]
            jsonschema.Draft202012Validator.check_schema(schema["function"]["parameters"])
        assert json.loads(json.dumps(schemas)) == schemas


@every_example
def test_gymnasium_env_checker_passes(example: ExampleEnv) -> None:
    check_env(load_example_class(example.name)(), skip_render_check=True)


@every_example
def test_solution_wins_within_budget(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for seed in SEEDS:
        actions = cls_solution(cls, seed)
        assert len(actions) <= cls.max_turns
        if example.kind == "tool":
            assert all(isinstance(a, dict) for a in actions[:-1]) and isinstance(actions[-1], str)
        episode = play(cls(), seed, actions)
        assert episode.terminated, (seed, episode.observations[-3:])
        assert episode.total >= cls.success_threshold, (seed, episode.observations)
        # the calls of the solution are well-formed: no error texts
        assert not any(o.startswith("Error:") for o in episode.observations), episode.observations


@every_example
def test_same_seed_same_trajectory(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for seed in range(4):
        runs = [play(cls(), seed, [], random_policy(random.Random(99))) for _ in range(2)]
        assert runs[0] == runs[1]
        env = cls()  # re-seeding the same instance replays too
        first = play(env, seed, cls_solution(cls, seed))
        assert play(env, seed, cls_solution(cls, seed)) == first


@every_example
def test_different_seeds_differ(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    fixed = [a for seed in range(3) for a in cls_solution(cls, seed)]  # same actions every seed
    if example.kind == "tool":
        fixed = cls_solution(cls, 0)
    trajectories = {json.dumps(play(cls(), seed, fixed).observations) for seed in SEEDS}
    solutions = {json.dumps(cls_solution(cls, seed)) for seed in SEEDS}
    assert len(trajectories) >= len(SEEDS) - 1
    assert len(solutions) >= len(SEEDS) - 1


@every_example
def test_random_play_rarely_wins(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    wins = 0
    for seed in range(50):
        episode = play(cls(), 1000 + seed, [], random_policy(random.Random(seed)))
        assert episode.turns <= cls.max_turns
        wins += episode.total >= cls.success_threshold
    assert wins <= 3, f"random policy won {wins}/50"


@every_example
def test_trivial_play_never_wins(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for action in TRIVIAL_ACTIONS:
        for seed in range(8):
            episode = play(cls(), seed, [], trivial_policy(action))
            assert episode.total < cls.success_threshold, (action, seed)


@every_example
def test_games_terminate_on_their_own_within_max_turns(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for seed in range(10):
        episode = play(cls(), seed, [], trivial_policy("0"))
        assert episode.terminated, "the env must end the episode itself (answer or budget)"
        assert episode.turns <= cls.max_turns


def _contains(text: str, answer: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(answer)}(?![\w])", text) is not None


@every_example
def test_observations_do_not_reveal_the_answer(example: ExampleEnv) -> None:
    cls = load_example_class(example.name)
    for seed in SEEDS:
        answer = cls_solution(cls, seed)[-1]
        assert isinstance(answer, str) and answer
        episode = play(cls(), seed, [], random_policy(random.Random(seed)))
        if example.kind == "tool":
            seen = episode.observations[:1]  # tool results are data the agent must read
        elif episode.total >= cls.success_threshold:
            seen = episode.observations[:-2]  # the guess that won was not revealed to it
        else:
            seen = episode.observations
        for text in [*seen, example.hint]:
            assert not _contains(text, answer), (seed, answer, text)


def _helper_digest(hash_seed: str) -> Any:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import _env_play; "
        "print(json.dumps(_env_play.digest_all()))"
    )
    env = {
        **os.environ,
        "PYTHONHASHSEED": hash_seed,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_deterministic_across_processes_with_different_hash_seeds() -> None:
    first, second = _helper_digest("1"), _helper_digest("2")
    assert first == second
    assert first == digest_all()
    assert len(first) == 4 * len(EXAMPLES)


def test_import_is_light() -> None:
    code = (
        "import sys, spade.envs; heavy = [m for m in ('torch', 'transformers', 'vllm') "
        "if m in sys.modules]; loaded = [m for m in sys.modules if m.startswith("
        "'spade.envs.examples.')]; print(heavy, loaded)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[] []"


def test_example_classes_are_textenvs() -> None:
    for example in EXAMPLES:
        assert issubclass(load_example_class(example.name), TextEnv)


class PickOneEnv(TextEnv):
    """Deliberately too easy: guess 1..3 with five tries. The probes must notice."""

    max_turns = 5

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 3)
        self.turn = 0
        return "Guess my number from 1 to 3.", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        won = action.strip() == str(self.secret)
        return ("yes" if won else "no"), float(won), won or self.turn >= self.max_turns, False, {}


class EchoCodeEnv(ToolEnv):
    """Deliberately too easy tool task: confirm the code printed in the instruction."""

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.code = f"K{self.rng.randint(100, 999)}"
        self.confirmed: list[str] = []
        return f"Confirm code {self.code} please.", {}

    @tool
    def confirm(self, code: str) -> str:
        """Confirm a code."""
        self.confirmed.append(code)
        return "ok"

    def check(self) -> float:
        return float(self.code in self.confirmed)


@pytest.mark.parametrize("cls", [PickOneEnv, EchoCodeEnv])
def test_random_policy_does_win_too_easy_envs(cls: type[TextEnv]) -> None:
    """The probe above is meaningful: the same random policy beats easy environments."""
    wins = sum(
        play(cls(), seed, [], random_policy(random.Random(seed))).total >= 1.0 for seed in range(50)
    )
    assert wins >= 8  # far above the bound of 3/50 that the examples must stay under
