"""Stages about how the environment behaves: types, rewards, determinism, variety, ending.

Each stage reads the shared :class:`State` and returns the details recorded in its
:class:`CheckResult`, or raises :class:`CheckFailed` (variety lives in
:mod:`spade.validate._variety` and is re-exported here). The probe episodes played in the
types and rewards stages also serve termination and the too-easy probe later.
"""

from __future__ import annotations

from typing import Any

from spade.validate._calls import Calls, StepResult
from spade.validate._failure import CheckFailed
from spade.validate._probes import Episode, Move, apply
from spade.validate._state import State, check_return, play_probes, play_sweeps
from spade.validate._variety import stage_variety

__all__ = [
    "stage_determinism",
    "stage_rewards",
    "stage_termination",
    "stage_types",
    "stage_variety",
]
from spade.validate._verdict import Stage


def stage_types(state: State) -> dict[str, Any]:
    """Play the instance episodes (every return value is type-checked on the way)."""
    play_probes(state, state.cfg.instance_seeds)
    return {
        "instance_seeds": [i.seed for i in state.instances],
        "max_observation_chars": max(len(i.first) for i in state.instances),
    }


#: Replies an agent really sends: whole sentences, reasoning with a boxed answer, and
#: tool calls that are cut off or not JSON. Every environment must answer them normally.
AWKWARD_REPLIES = (
    "I am not sure yet. Let me think about it step by step before I answer.",
    "The answer is probably 42, because it is the largest number mentioned. \\boxed{42}",
    '<tool_call>{"name": "submit", "arguments": {"answer": </tool_call>',
    "<tool_call>not json at all</tool_call>\nFinal answer: yes",
    "Answer:\n\n```\n1, 2, 3\n```\n\nDone? Maybe. ¿Sí? 答案",
)


#: Numbers and letters at the edges: what turns ``float(action)`` into inf or nan, an
#: ``int`` beyond any range, a negative count, an option letter past the options.
#: An edge action that wins an episode is tried as a constant answer by the too-easy stage.
EDGE_ACTIONS = ("inf", "nan", "1e309", "-1", "9" * 400, "E", "Z")


def stage_rewards(state: State) -> dict[str, Any]:
    """Play the rest of the probe plan; every episode's return must lie in range. Then
    episodes of whole natural-language replies and malformed tool calls (a crash on a
    sentence is a crash on a real agent), and of numbers and letters at the edges."""
    play_probes(state, len(state.plan()))
    totals = [e.total for e in state.episodes]
    _send_all(state, AWKWARD_REPLIES, "replies", "natural-language reply", cycle=True)
    _send_all(state, EDGE_ACTIONS, "edges", "edge action", cycle=False)
    return {"episodes": len(totals), "min_return": min(totals), "max_return": max(totals)}


def _send_all(state: State, replies: tuple[str, ...], stream: str, label: str, *,
              cycle: bool) -> None:
    """Send ``replies`` in turn, resetting a new seed whenever an episode ends (``cycle``:
    one episode only, the replies repeated until it ends); every return is checked."""
    k, sent = 0, 0
    while sent < (state.turns if cycle else len(replies)):
        seed = state.seed(stream, k)
        state.a.reset(seed)
        total, turns = 0.0, 0
        while sent < (state.turns if cycle else len(replies)) and turns < state.turns:
            reply = replies[sent % len(replies)]
            where = f"at turn {turns + 1} (seed {seed}, {label})"
            result = state.a.step(reply, where)
            won_before = state.win(total)
            sent, turns, total = sent + 1, turns + 1, total + result.reward
            if not cycle and not won_before and state.win(total):
                state.edge_wins.append(reply)
            if result.ended:
                break
        check_return(state, total, f"seed {seed}, {label}s")
        if cycle:
            return
        k += 1


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
    """Two recordings of the same probe episode must agree result by result (the second
    worker had not called ``solution()`` yet; its solutions are compared as instances)."""
    if mine.first != theirs.first:
        raise _nondeterministic(
            mine.seed, "the first observation", _differ(mine.first, theirs.first), who
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
    who = (f"a second worker with a different hash seed ({state.cfg.hash_seeds[1]}), a shifted "
           "clock and no solution() call before its episodes disagrees")
    for index, theirs in sorted(second.items()):
        compared += _compare(state.episodes[index], theirs, who)
    theirs_sweeps = state.second.sweeps if state.second is not None else []
    if theirs_sweeps:
        for swept, other in zip(play_sweeps(state, state.a), theirs_sweeps, strict=False):
            check_return(state, swept.total, f"seed {swept.seed}, determinism sweep")
            compared += _compare(swept, other, who)
    for k in range(state.cfg.repeat_seeds):  # the second worker's, compared as they come
        state.a.reset(state.seed("repeat", k))
    instances = state.second.instances if state.second is not None else {}
    mine = {i.seed: i for i in state.instances}
    for seed, (first, solution) in sorted(instances.items()):
        ours = mine.get(seed)
        if ours is None:
            continue
        if ours.first != first:
            raise _nondeterministic(seed, "the first observation", _differ(ours.first, first), who)
        if ours.solution != solution:
            raise _nondeterministic(seed, "solution()", _differ(ours.solution, solution), who)
        compared += 2
    return {
        "hash_seeds": list(state.cfg.hash_seeds),
        "episodes_compared": len(second) + 1,
        "instances_compared": len(instances),
        "repeat_seeds": state.cfg.repeat_seeds,
        "results_compared": compared,
    }


def stage_termination(state: State) -> dict[str, Any]:
    """Episodes end: by the env, or by the runner's cap at ``max_turns``.

    An episode that reaches ``max_turns`` without ``terminated``/``truncated`` is one the
    runner truncates, which is fine (a game may end itself only on a win). What is not
    fine: a ``max_turns`` above the cap, or an environment that never ends any episode by
    itself -- not one probe episode and not its own ``solution()`` -- since that cannot
    be told apart from a game with no end at all. (A step that hangs fails earlier, as a
    timeout.)
    """
    cap = state.cfg.max_turns_cap
    if state.info.max_turns > cap:
        raise CheckFailed(
            Stage.TERMINATION, f"max_turns = {state.info.max_turns} exceeds the cap of {cap} turns"
        )
    ended = sum(e.ended for e in state.episodes)
    details = {
        "episodes": len(state.episodes),
        "ended_by_env": ended,
        "truncated_by_runner": len(state.episodes) - ended,
        "longest_episode": max(e.turns for e in state.episodes),
    }
    if ended:
        return details
    if _solution_ends(state):
        return {**details, "ended_by_env": "only the solution replay"}
    raise CheckFailed(
        Stage.TERMINATION,
        f"no episode ever ended: none of the {len(state.episodes)} probe episodes set "
        f"terminated or truncated within max_turns = {state.info.max_turns} turns"
        + ("" if state.info.has_solution else " and there is no solution() to show an end")
        + "; the runner's cap truncates long episodes, but the environment must end an "
        "episode itself at least once it is won",
        **details,
    )


def _solution_ends(state: State) -> bool:
    """Does replaying one instance's ``solution()`` end its episode?"""
    instance = next((i for i in state.instances if i.solution), None)
    if instance is None or instance.solution is None:
        return False
    moves: list[Move]
    if state.kind == "tool":
        *calls, final = instance.solution
        moves = [("tool", c["name"], c.get("arguments", {})) for c in calls]
        moves.append(("step", final))
    else:
        moves = [("step", a) for a in instance.solution]
    state.a.reset(instance.seed)
    for turn, move in enumerate(moves[: state.turns], start=1):
        result = apply(state.a, move, f"at turn {turn} (seed {instance.seed}, solution replay)")
        if isinstance(result, StepResult) and result.ended:
            return True
    return False
