"""Random and trivial policies, and the recorded episodes they play.

The probe policies stand in for an agent that does not reason: constant answers, echoes of
the observation, random numbers and words, and (for tool use) random tool calls followed by
a guess. Their episodes serve several checks at once (types, rewards, termination,
too-easy) and are recorded so that a second worker can replay them for determinism. Their
actions come from ``random.Random`` seeded with strings, which is stable across processes
and hash seeds.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade.validate._calls import Calls, StepResult

#: One move: ("step", text) or ("tool", name, arguments).
Move = tuple[Any, ...]
_WORD = re.compile(r"-?\d+(?:\.\d+)?|\w+", re.UNICODE)
_VOCAB = (
    "yes",
    "no",
    "true",
    "false",
    "a",
    "b",
    "c",
    "d",
    "A",
    "B",
    "C",
    "D",
    "up",
    "down",
    "left",
    "right",
    "north",
    "south",
    "east",
    "west",
    "done",
    "none",
    "x",
    "answer",
)
_TRIVIAL = ("0", "1", "yes", "no", "done", "true", "false", "")


def words(text: str) -> list[str]:
    """Word and number tokens of a text (punctuation dropped)."""
    return _WORD.findall(text)


@dataclass
class Context:
    """What a probe policy sees: the instruction, the latest text, the turn and its RNG."""

    first: str
    last: str
    turn: int
    max_turns: int
    rng: random.Random
    tools: list[dict[str, Any]]
    plan: int = 0  # tool policies: how many tool calls to make before answering


@dataclass
class Episode:
    """A recorded probe episode: its moves and what the environment returned."""

    seed: int
    policy: str
    first: str
    events: list[tuple[Move, Any]] = field(default_factory=list)
    solution: list[Any] | None = None  # normalised solution() right after reset, if asked
    total: float = 0.0
    ended: bool = False

    @property
    def turns(self) -> int:
        return len(self.events)


Policy = Callable[[Context], Move]


def _token(text: str, rng: random.Random) -> str:
    found = words(text)
    return rng.choice(found) if found else ""


def _random_number(ctx: Context) -> Move:
    rng = ctx.rng
    return (
        "step",
        str(rng.choice([rng.randint(0, 9), rng.randint(0, 100), rng.randint(-100, 1000)])),
    )


def _random_text(ctx: Context) -> Move:
    rng = ctx.rng
    if rng.random() < 0.5:
        return ("step", rng.choice(_VOCAB))
    return (
        "step",
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 6))),
    )


GAME_POLICIES: dict[str, Policy] = {
    "empty": lambda ctx: ("step", ""),
    "zero": lambda ctx: ("step", "0"),
    "one": lambda ctx: ("step", "1"),
    "echo": lambda ctx: ("step", _token(ctx.last, ctx.rng) or _token(ctx.first, ctx.rng)),
    "random_number": _random_number,
    "random_text": _random_text,
}


def _random_tools(ctx: Context) -> Move:
    if ctx.tools and ctx.turn < min(ctx.plan, ctx.max_turns - 1):  # answer on time
        spec = ctx.rng.choice(ctx.tools)
        return ("tool", spec["name"], random_arguments(spec.get("parameters", {}), ctx))
    if ctx.turn == 0 or not ctx.last:
        return ("step", _token(ctx.first, ctx.rng))
    return ("step", ctx.last[:200] if ctx.rng.random() < 0.5 else _token(ctx.last, ctx.rng))


#: Guesses that split the usual ranges (a half, quarters, eighths, the ends, larger
#: magnitudes): two instances with different hidden state answer them differently, where
#: small random numbers all get the same "higher".
SWEEP = ("50", "25", "75", "12", "37", "62", "88", "6", "94", "3", "97", "500", "1000", "0",
         "-1", "yes", "no", "a", "e")  # fmt: skip


def sweep(ctx: Context) -> Move:
    """The determinism sweep: :data:`SWEEP` in order (see ``stage_determinism``)."""
    return ("step", SWEEP[ctx.turn % len(SWEEP)])


TOOL_POLICIES: dict[str, Policy] = {
    "answer_empty": lambda ctx: ("step", ""),
    "answer_trivial": lambda ctx: ("step", ctx.rng.choice(_TRIVIAL)),
    "echo": lambda ctx: ("step", _token(ctx.first, ctx.rng)),
    "random_tools": _random_tools,
}


def random_arguments(parameters: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Plausible arguments for a schema: instruction tokens, small numbers, enum members."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    arguments: dict[str, Any] = {}
    for name, schema in properties.items() if isinstance(properties, dict) else []:
        if name in required or ctx.rng.random() < 0.5:
            arguments[name] = _random_value(schema if isinstance(schema, dict) else {}, ctx, 0)
    return arguments


def _random_value(schema: dict[str, Any], ctx: Context, depth: int) -> Any:
    rng = ctx.rng
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    kinds = schema.get("type")
    kinds = [k for k in kinds if k != "null"] if isinstance(kinds, list) else [kinds]
    kind = rng.choice(kinds) if kinds else "string"
    numbers = [w for w in words(ctx.first + " " + ctx.last) if w.lstrip("-").isdigit()]
    if kind == "integer":
        return int(rng.choice(numbers)) if numbers and rng.random() < 0.5 else rng.randint(0, 100)
    if kind == "number":
        return float(rng.choice(numbers)) if numbers and rng.random() < 0.5 else rng.randint(0, 100)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array" and depth < 2:
        return [
            _random_value(schema.get("items") or {}, ctx, depth + 1)
            for _ in range(rng.randint(1, 2))
        ]
    if kind == "object":
        return {}
    text = ctx.first + " " + ctx.last
    return _token(text, rng) if rng.random() < 0.8 else _random_text(ctx)[1]


def policy_rng(base_seed: int, policy: str, episode: int) -> random.Random:
    """The probe's own RNG for one episode (string seeding: stable across hash seeds)."""
    return random.Random(f"spade-probe:{base_seed}:{policy}:{episode}")


def play(
    calls: Calls,
    seed: int,
    name: str,
    policy: Policy,
    *,
    rng: random.Random,
    max_turns: int,
    tools: list[dict[str, Any]],
    first: str,
) -> Episode:
    """Play one episode of ``policy`` (already reset to ``first``) for at most ``max_turns``."""
    episode = Episode(seed=seed, policy=name, first=first)
    ctx = Context(
        first=first,
        last=first,
        turn=0,
        max_turns=max_turns,
        rng=rng,
        tools=tools,
        plan=rng.randint(1, max(1, min(3, max_turns - 1))),
    )
    for turn in range(max_turns):
        ctx.turn = turn
        move = policy(ctx)
        result = apply(calls, move, f"at turn {turn + 1} (seed {seed}, policy {name!r})")
        episode.events.append((move, result))
        if isinstance(result, StepResult):
            episode.total += result.reward
            ctx.last = result.observation
            if result.ended:
                episode.ended = True
                break
        else:
            ctx.last = result
    return episode


def apply(calls: Calls, move: Move, where: str) -> StepResult | str:
    """Send one move to the environment."""
    if move[0] == "tool":
        return calls.call_tool(move[1], move[2], where)
    return calls.step(move[1], where)
