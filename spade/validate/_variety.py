"""VARIETY: different seeds must give different instances.

An instance is first compared by what the validator already has: its first observation
and its ``solution()``. Hidden-state games often show every seed the same opening text
and need not define ``solution()`` ("guess my number"), so when those tie, the seeds are
also compared by the full trajectories (observations, rewards, flags) of a few fixed probe
sequences played from a fresh reset: numbers across a range, letters and common words,
coordinates and commands, the opening text's own tokens, and one seed's ``solution()``
replayed on every seed. The same actions on the same instance give the same trajectory
(determinism was checked before), so different trajectories prove different instances.

The verdict weighs the evidence. When the instances can be told apart by what they show
(first observations or solutions differ), fewer than ``min_distinct_fraction`` distinct
ones is a real lack of variety. When they show nothing, the probes only give a lower
bound on the number of instances, so the stage then fails only when every seed behaved
identically under every probe -- the "same instance for every seed" bug.

Two more rules look at the size of the instance space. Variety over *solutions*: when
three or more seeds define a solution and it is the same for all of them, one memorised
answer solves the task ("the same solution for every seed"). Counting instances: when the
instance seeds already repeat an instance (some, not all, first observations are equal),
``instance_topup`` more seeds are reset and fewer than ``min_distinct_instances``
distinct instances (first observation and solution) in all fails -- an environment with
fewer than about ten instances per hundred seeds is memorised, not solved.
"""

from __future__ import annotations

import math
from typing import Any

from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._probes import Context, Move, apply, policy_rng, random_arguments, words
from spade.validate._state import EPS, Instance, State, normalise_solution
from spade.validate._verdict import Stage

#: Fixed game probe sequences, most telling for common hidden-state games first.
_GAME_SEQUENCES: tuple[tuple[str, ...], ...] = (
    ("50", "25", "75", "12", "88", "37", "63", "6", "94", "1", "100", "3", "18", "31", "44"),
    ("500", "250", "750", "5000", "125", "875", "375", "625", "2500", "7500", "50000", "1000"),
    ("e", "crane", "a", "slate", "s", "pilot", "t", "house", "r", "o", "i", "n", "yes", "no"),
    ("0,0", "4,4", "1 2", "up", "left", "A", "B", "C", "D", "look", "help", "0", "2", "7"),
)


def _fingerprint(instance: Instance) -> str:
    return repr((instance.first, instance.solution))


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _same_solution(state: State) -> None:
    solved = [i for i in state.instances if i.solution]
    if len(solved) >= 3 and len({repr(i.solution) for i in solved}) == 1:
        raise CheckFailed(
            Stage.VARIETY,
            f"every seed has the same solution {_clip(solved[0].solution)} ({len(solved)} "
            "seeds with a solution): one memorised answer solves every instance",
        )


def _instance_count(state: State) -> dict[str, Any]:
    instances = state.instances
    firsts = {i.first for i in instances}
    if len(firsts) in (1, len(instances)):
        return {}  # hidden instances (told apart by the probes) or no repeat at all
    prints = {_fingerprint(i) for i in instances}
    seeds = len(instances)
    for k in range(state.cfg.instance_topup):
        seed = state.seed("instances", k)
        first = state.a.reset(seed)
        solution = None
        if state.info.has_solution:
            solution = normalise_solution(state.a.solution(seed), state.kind, seed)
        prints.add(_fingerprint(Instance(seed, first, solution)))
        seeds += 1
    details = {"instances_counted": len(prints), "seeds_counted": seeds}
    if len(prints) < state.cfg.min_distinct_instances:
        raise CheckFailed(
            Stage.VARIETY,
            f"too few distinct instances: {len(prints)} over {seeds} seeds (need "
            f"{state.cfg.min_distinct_instances}); an instance space this small is "
            "memorised, not solved",
            **details,
        )
    return details


def stage_variety(state: State) -> dict[str, Any]:
    details = _observed_variety(state)
    _same_solution(state)
    return {**details, **_instance_count(state)}


def _observed_variety(state: State) -> dict[str, Any]:
    instances = state.instances
    n = len(instances)
    need = max(2, math.ceil(state.cfg.min_distinct_fraction * n - EPS))
    prints = [_fingerprint(i) for i in instances]
    method = "first observation and solution"
    for probes, sequence in enumerate(_sequences(state), start=1):
        if len(set(prints)) >= need:
            break
        method = f"first observation, solution and {probes} probe trajectories"
        prints = [
            p + repr(_trajectory(state, i.seed, sequence))
            for p, i in zip(prints, instances, strict=True)
        ]
    distinct = len(set(prints))
    details = {"distinct": distinct, "seeds": n, "compared": method}
    if distinct >= need:
        return details
    hidden = len({_fingerprint(i) for i in instances}) == 1
    if hidden and distinct > 1:
        # nothing visible tells instances apart, so the probes give only a lower bound
        return {**details, "note": "hidden instances: the probes found some difference"}
    raise CheckFailed(
        Stage.VARIETY,
        f"different seeds give the same instance: only {distinct} "
        f"distinct instance(s) over {n} seeds (need {need}); compared the {method}",
        distinct=distinct,
    )


def _sequences(state: State) -> list[list[Move]]:
    """Fixed probe sequences (each played from a fresh reset, cut to the turn limit)."""
    turns = state.turns
    first = state.instances[0].first
    if state.kind == "tool":
        found: list[list[Move]] = []
        for k in range(3):
            rng = policy_rng(state.base_seed, f"variety{k}", 0)
            ctx = Context(first=first, last="", turn=0, max_turns=turns, rng=rng, tools=state.tools)
            calls: list[Move] = [
                ("tool", t["name"], random_arguments(t.get("parameters") or {}, ctx))
                for t in state.tools
            ]
            answer = ("step", ["0", _first_token(first), "yes"][k])
            found.append([*calls[: max(0, turns - 1)], answer])
        return found
    sequences = [[("step", a) for a in s[:turns]] for s in _GAME_SEQUENCES]
    tokens = list(dict.fromkeys(words(first)))[:turns]
    if tokens:
        sequences.append([("step", t) for t in tokens])
    solution = next((i.solution for i in state.instances if i.solution), None)
    if solution:
        sequences.append([("step", str(a)) for a in solution[:turns]])
    return sequences


def _first_token(text: str) -> str:
    found = words(text)
    return found[0] if found else ""


def _trajectory(state: State, seed: int, moves: list[Move]) -> list[Any]:
    state.a.reset(seed)
    results: list[Any] = []
    for move in moves:
        result = apply(state.a, move, f"(seed {seed}, variety probe)")
        results.append(result)
        if isinstance(result, StepResult) and result.ended:
            break
    return results
