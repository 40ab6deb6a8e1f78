"""Play helpers for the example tests (also run in subprocesses with other hash seeds)."""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

from spade.envs import TextEnv, ToolEnv, list_examples, load_example_class

_TOKEN = re.compile(r"[A-Za-z0-9_:-]+(?:\.[A-Za-z0-9_]+)*")


@dataclass
class Episode:
    """What happened in one episode: every observation/tool result, rewards, end flags."""

    observations: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    turns: int = 0
    terminated: bool = False
    truncated: bool = False

    @property
    def total(self) -> float:
        return float(sum(self.rewards))


def check_step(result: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Assert the step contract and return the tuple."""
    assert isinstance(result, tuple) and len(result) == 5, result
    obs, reward, terminated, truncated, info = result
    assert isinstance(obs, str)
    assert isinstance(reward, float | int) and not isinstance(reward, bool)
    assert math.isfinite(reward)
    assert type(terminated) is bool and type(truncated) is bool
    assert isinstance(info, dict)
    return obs, float(reward), terminated, truncated, info


def play(env: TextEnv, seed: int, actions: list[Any], policy: Any = None) -> Episode:
    """Play scripted ``actions`` (then ``policy(history)`` if given) for up to max_turns.

    Game actions are strings; tool-env actions are ``{"name", "arguments"}`` dicts (one
    call per turn) or the final answer string. Like the runner, stop at ``max_turns``.
    """
    obs, info = env.reset(seed=seed)
    assert isinstance(obs, str) and isinstance(info, dict)
    episode = Episode(observations=[obs])
    queue = list(actions)
    while episode.turns < env.max_turns and not (episode.terminated or episode.truncated):
        if queue:
            action = queue.pop(0)
        elif policy is not None:
            action = policy(env, episode)
        else:
            break
        episode.turns += 1
        if isinstance(action, dict):
            assert isinstance(env, ToolEnv)
            result = env.call_tool(action["name"], action["arguments"])
            assert isinstance(result, str)
            episode.observations.append(result)
            continue
        obs, reward, term, trunc, _ = check_step(env.step(action))
        episode.observations.append(obs)
        episode.rewards.append(reward)
        episode.terminated, episode.truncated = term, trunc
    return episode


def _tokens(episode: Episode) -> list[str]:
    return [t for obs in episode.observations for t in _TOKEN.findall(obs)]


def _random_value(rng: random.Random, schema: dict[str, Any], tokens: list[str]) -> Any:
    kinds = schema.get("type")
    kind = rng.choice(kinds) if isinstance(kinds, list) else kinds
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if kind == "integer":
        numbers = [int(t) for t in tokens if t.isdigit()]
        return rng.choice(numbers) if numbers and rng.random() < 0.7 else rng.randint(0, 100)
    if kind == "number":
        return round(rng.uniform(0, 500), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(rng, schema["items"], tokens) for _ in range(rng.randint(1, 3))]
    if kind == "object":
        return {}
    if kind == "null":
        return None
    if tokens and rng.random() < 0.8:  # words seen so far, single or in pairs
        i = rng.randrange(len(tokens))
        return " ".join(tokens[i : i + rng.randint(1, 2)])
    return "".join(rng.choice("abcdefghij0123456789") for _ in range(6))


def random_policy(rng: random.Random) -> Any:
    """A seeded policy that plays plausible-looking but uninformed actions."""

    def act(env: TextEnv, episode: Episode) -> Any:
        tokens = _tokens(episode)
        if isinstance(env, ToolEnv):
            if episode.turns < env.max_turns - 1 and rng.random() < 0.85:
                spec = rng.choice(env.tool_specs())
                props = spec.parameters["properties"]
                return {
                    "name": spec.name,
                    "arguments": {k: _random_value(rng, s, tokens) for k, s in props.items()},
                }
            return rng.choice([*tokens, "0", "done"]) if tokens else "done"
        numbers = [int(t) for t in tokens if t.isdigit()]
        choice = rng.randrange(4)
        if choice == 0 and numbers:  # a number in the range the text talks about
            return str(rng.randint(min(numbers), max(numbers)))
        if choice == 1:
            return "".join(rng.choice("123456") for _ in range(4))
        if choice == 2 and tokens:
            return rng.choice(tokens)
        return str(rng.randint(0, 100_000))

    return act


TRIVIAL_ACTIONS = ["0", "1", "", "1111", "yes", "done"]


def trivial_policy(action: str) -> Any:
    """Always the same reply (for tool envs: answer at once)."""
    return lambda env, episode: action


def digest_all(seeds: range = range(4)) -> dict[str, Any]:
    """Trajectories of every example under the solution and a seeded random policy."""
    out: dict[str, Any] = {}
    for example in list_examples():
        cls = load_example_class(example.name)
        for seed in seeds:
            solved = play(cls(), seed, cls_solution(cls, seed))
            randomly = play(cls(), seed, [], random_policy(random.Random(seed)))
            out[f"{example.name}/{seed}"] = [
                solved.observations,
                solved.rewards,
                randomly.observations,
                randomly.rewards,
            ]
    return json.loads(json.dumps(out))


def cls_solution(cls: type[TextEnv], seed: int) -> list[Any]:
    env = cls()
    env.reset(seed=seed)
    solution = env.solution()
    assert solution is not None
    return list(solution)
