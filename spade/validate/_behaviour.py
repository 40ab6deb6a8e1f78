"""Stages about how the environment behaves: types, rewards, determinism, variety, ending.

Each stage reads the shared :class:`State` and returns the details recorded in its
:class:`CheckResult`, or raises :class:`CheckFailed`. The probe episodes played in the
types and rewards stages also serve termination and the too-easy probe later.
"""

from __future__ import annotations

import math
from typing import Any

from spade.validate._calls import Calls, StepResult
from spade.validate._failure import CheckFailed
from spade.validate._probes import Context, Episode, Move, apply, policy_rng, random_arguments
from spade.validate._state import EPS, Instance, State, play_probes
from spade.validate._verdict import Stage


def stage_types(state: State) -> dict[str, Any]:
    """Play the instance episodes (every return value is type-checked on the way)."""
    play_probes(state, state.cfg.instance_seeds)
    return {
        "instance_seeds": [i.seed for i in state.instances],
        "max_observation_chars": max(len(i.first) for i in state.instances),
    }


def stage_rewards(state: State) -> dict[str, Any]:
    """Play the rest of the probe plan; every episode's return must lie in range."""
    play_probes(state, len(state.plan()))
    totals = [e.total for e in state.episodes]
    return {"episodes": len(totals), "min_return": min(totals), "max_return": max(totals)}


def _differ(a: Any, b: Any) -> str | None:
    if isinstance(a, StepResult) and isinstance(b, StepResult):
        for name in ("observation", "reward", "terminated", "truncated"):
            if getattr(a, name) != getattr(b, name):
                return f"{name} {_clip(getattr(a, name))} vs {_clip(getattr(b, name))}"
        return None
    return None if a == b else f"{_clip(a)} vs {_clip(b)}"


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _replay(calls: Calls, episode: Episode, who: str) -> int:
    """Play ``episode``'s moves again from ``reset(seed)``; stop at the first difference."""
    first = calls.reset(episode.seed)
    if first != episode.first:
        raise _nondeterministic(
            episode.seed, "the first observation", _differ(episode.first, first), who
        )
    for turn, (move, recorded) in enumerate(episode.events, start=1):
        result = apply(calls, move, f"at turn {turn} (seed {episode.seed}, replay)")
        diff = _differ(recorded, result)
        if diff:
            raise _nondeterministic(episode.seed, _turn(turn, move), diff, who)
    return 1 + len(episode.events)


def _compare(mine: Episode, theirs: Episode, who: str) -> int:
    """Two recordings of the same probe episode must agree result by result."""
    if mine.first != theirs.first:
        raise _nondeterministic(
            mine.seed, "the first observation", _differ(mine.first, theirs.first), who
        )
    if mine.solution != theirs.solution:
        raise _nondeterministic(
            mine.seed, "solution()", _differ(mine.solution, theirs.solution), who
        )
    for turn, ((move, a), (_, b)) in enumerate(zip(mine.events, theirs.events, strict=False), 1):
        diff = _differ(a, b)
        if diff:
            raise _nondeterministic(mine.seed, _turn(turn, move), diff, who)
    if len(mine.events) != len(theirs.events):
        raise _nondeterministic(
            mine.seed, "episode length", f"{len(mine.events)} vs {len(theirs.events)} turns", who
        )
    return 2 + len(mine.events)


def _turn(turn: int, move: Move) -> str:
    return f"turn {turn} ({move[0]} {_clip(move[1:], 40)})"


def _nondeterministic(seed: int, where: str, diff: str | None, who: str) -> CheckFailed:
    return CheckFailed(
        Stage.DETERMINISM,
        f"same seed and actions gave different results: seed {seed}, {where}: {diff} ({who})",
    )


def stage_determinism(state: State, wait_second: Any) -> dict[str, Any]:
    """Replay within the first worker, then compare with the second worker's recordings."""
    longest = max(state.episodes, key=lambda e: e.turns)
    compared = _replay(state.a, longest, "the same worker, replayed later")
    second = wait_second()
    who = f"a second worker with a different hash seed ({state.cfg.hash_seeds[1]}) disagrees"
    for index, theirs in sorted(second.items()):
        compared += _compare(state.episodes[index], theirs, who)
    return {
        "hash_seeds": list(state.cfg.hash_seeds),
        "episodes_compared": len(second) + 1,
        "results_compared": compared,
    }


def _fingerprint(instance: Instance) -> str:
    return repr((instance.first, instance.solution))


def stage_variety(state: State) -> dict[str, Any]:
    n = len(state.instances)
    need = max(2, math.ceil(state.cfg.min_distinct_fraction * n - EPS))
    prints = [_fingerprint(i) for i in state.instances]
    method = "first observation and solution"
    if len(set(prints)) < need:
        method = "first observation, solution and a fixed probe trajectory"
        prints = [
            p + repr(_fixed_probe(state, i.seed))
            for p, i in zip(prints, state.instances, strict=True)
        ]
    distinct = len(set(prints))
    if distinct < need:
        raise CheckFailed(
            Stage.VARIETY,
            f"different seeds give the same instance: only {distinct} "
            f"distinct instance(s) over {n} seeds (need {need}); compared the {method}",
            distinct=distinct,
        )
    return {"distinct": distinct, "seeds": n, "compared": method}


def _fixed_probe(state: State, seed: int) -> list[Any]:
    first = state.a.reset(seed)
    rng = policy_rng(state.cfg.seed, "variety", 0)
    moves: list[Move] = []
    if state.kind == "tool":
        ctx = Context(
            first=first, last="", turn=0, max_turns=state.turns, rng=rng, tools=state.tools
        )
        moves = [
            ("tool", t["name"], random_arguments(t.get("parameters") or {}, ctx))
            for t in state.tools[: max(0, state.turns - 1)][:3]
        ]
        moves.append(("step", "0"))
    else:
        moves = [("step", a) for a in ("0", "1", "a", "50")[: state.turns]]
    results: list[Any] = []
    for move in moves:
        result = apply(state.a, move, f"(seed {seed}, variety probe)")
        results.append(result)
        if isinstance(result, StepResult) and result.ended:
            break
    return results


def stage_termination(state: State) -> dict[str, Any]:
    cap = state.cfg.max_turns_cap
    if state.info.max_turns > cap:
        raise CheckFailed(
            Stage.TERMINATION, f"max_turns = {state.info.max_turns} exceeds the cap of {cap} turns"
        )
    for episode in state.episodes:
        if not episode.ended:
            raise CheckFailed(
                Stage.TERMINATION,
                f"an episode did not end within max_turns = {state.info.max_turns} turns (seed "
                f"{episode.seed}, policy {episode.policy!r}); the environment must set terminated "
                "or truncated itself once the turns are used up",
            )
    longest = max(e.turns for e in state.episodes)
    return {"episodes": len(state.episodes), "longest_episode": longest}
