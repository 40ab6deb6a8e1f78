"""Stages about the task itself: is the answer hidden, hard to guess, reachable, and are
the tools well formed? They use the instances and probe episodes gathered earlier.
"""

from __future__ import annotations

import re
from typing import Any

from spade.validate import _leaks
from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._probes import Move, apply
from spade.validate._state import State, check_return, normalise_solution
from spade.validate._too_easy import play_constant as _play_constant
from spade.validate._too_easy import stage_too_easy
from spade.validate._tool_schema import bad_calls, check_schemas

__all__ = [
    "answers",
    "stage_answer_leak",
    "stage_hint_leak",
    "stage_solution",
    "stage_too_easy",
    "stage_tool_schema",
]
from spade.validate._verdict import Stage


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def answers(state: State) -> list[_leaks.Answer]:
    """Answer candidates of every instance.

    Game solutions lose their fixed final commands first (an action that ends every
    seed's solution alike, such as 'submit'); a final action that is a mere move (it also
    occurs mid-solution) is not an answer either.
    """
    solutions = [i.solution for i in state.instances if i.solution]
    commands = _leaks.command_suffix(solutions) if state.kind == "game" else 0
    cores = [s[: len(s) - commands] if len(s) > 1 else s for s in solutions]
    moves = state.kind == "game" and _leaks.final_is_move(cores)
    found = []
    for instance in state.instances:
        solution = instance.solution
        if not solution:
            continue
        core = len(solution) - (commands if len(solution) > 1 else 0)
        for answer in _leaks.answers_of(
            instance.seed, solution, state.kind, commands=commands if len(solution) > 1 else 0
        ):
            if not (moves and not answer.sequence and core > 1):
                found.append(answer)
    return found


def _alone_wins(state: State, answer: _leaks.Answer) -> bool:
    """Tool envs: does submitting the answer with no tool calls win?"""
    state.a.reset(answer.seed)
    return state.win(state.a.step(answer.text, f"(seed {answer.seed}, answer alone)").reward)


#: First seed (offset from the base seed) of the answer-leak top-up.
_LEAK_TOPUP_SEEDS = 30_000


def _more_answers(state: State, firsts: dict[int, str]) -> list[_leaks.Answer]:
    """Answers of ``leak_topup`` fresh seeds, so a rate is not judged on eight samples."""
    found = []
    base = state.cfg.seed + _LEAK_TOPUP_SEEDS
    for k in range(state.cfg.leak_topup):
        seed = base + k
        firsts[seed] = state.a.reset(seed)
        solution = normalise_solution(state.a.solution(seed), state.kind, seed)
        if solution:
            found += _leaks.answers_of(seed, solution, state.kind)
    return found


def stage_answer_leak(state: State) -> dict[str, Any]:
    """A leak found on the instance seeds is re-judged after topping up the sample (a 75%
    rule judged on eight seeds rejects a 39% environment now and then)."""
    found = answers(state)
    if not found:
        return {"skipped": "no solution to compare against"}
    firsts = {i.seed: i.first for i in state.instances}
    topped = False
    for sequence in (True, False):
        cases = [(a, firsts[a.seed]) for a in found if a.sequence == sequence]
        leak = _leaks.observation_leak(cases, state.cfg.leak_min_fraction)
        if leak is not None and not topped:
            topped = True
            found = found + _more_answers(state, firsts)
            cases = [(a, firsts[a.seed]) for a in found if a.sequence == sequence]
            leak = _leaks.observation_leak(cases, state.cfg.leak_min_fraction)
        if leak is None:
            continue
        example = next(a for a in found if a.seed == leak.seeds[0] and a.sequence == sequence)
        if state.kind == "tool" and not _alone_wins(state, example):
            continue
        what = "the full solution" if sequence else "the answer"
        raise CheckFailed(
            Stage.ANSWER_LEAK,
            f"the observation gives away {what}: for "
            f"{len(leak.seeds)} of {leak.total} seeds it is {leak.rule} (seed "
            f"{example.seed}: {_clip(example.text, 50)} in "
            f"{_clip(firsts[example.seed], 80)})",
        )
    return {"answers_checked": len(found)}


def stage_solution(state: State) -> dict[str, Any]:
    solved = [i for i in state.instances if i.solution][: state.cfg.solution_seeds]
    if not solved:
        reason = (
            "no solution() defined" if not state.info.has_solution else "solution() returned None"
        )
        return {"skipped": reason}
    returns = []
    for instance in solved:
        solution = instance.solution or []
        if len(solution) > state.info.max_turns:
            raise CheckFailed(
                Stage.SOLUTION,
                f"solution() for seed {instance.seed} needs "
                f"{len(solution)} turns but max_turns is {state.info.max_turns}",
            )
        if state.kind == "tool":
            *calls, final = solution
            moves: list[Move] = [("tool", c["name"], c.get("arguments", {})) for c in calls]
            moves.append(("step", final))
        else:
            moves = [("step", a) for a in solution]
        state.a.reset(instance.seed)
        total, last = 0.0, instance.first
        for turn, move in enumerate(moves, start=1):
            result = apply(state.a, move, f"at turn {turn} (seed {instance.seed}, solution replay)")
            if isinstance(result, StepResult):
                total += result.reward
                last = result.observation
                if result.ended:
                    break
        check_return(state, total, f"seed {instance.seed}, solution replay")
        if not state.win(total):
            raise CheckFailed(
                Stage.SOLUTION,
                f"solution() does not win: replaying its "
                f"{len(moves)} move(s) from reset(seed={instance.seed}) gave return "
                f"{total:g} (success threshold {state.info.success_threshold:g}); "
                f"last observation: {_clip(last, 80)}",
            )
        returns.append(total)
    return {"seeds": [i.seed for i in solved], "returns": returns}


#: First seed (offset from the base seed) of the hint-phrase probe.
_HINT_SEEDS = 40_000
_STOP_WORDS = ("the a an and or of to in on at is are be it its this that with for from by "
               "as not no you your try think about")  # fmt: skip
_STOP = frozenset(_STOP_WORDS.split())


def _hint_phrases(hint: str) -> list[str]:
    """What a policy could copy out of the hint: quoted phrases, numbers (spelled-out and
    digit-by-digit ones as digits), then its rarer words; at most 12."""
    found = [m.strip() for m in re.findall(r"[\"'“‘`]([^\"'”’`]{1,80})[\"'”’`]", hint)]
    found += [t for t in _leaks.tokens(hint) if t.lstrip("-").isdigit()]
    found += sorted(_leaks.digit_runs(hint))
    found += [w for w in _leaks.tokens(hint) if len(w) > 3 and w not in _STOP]
    return [p for p in dict.fromkeys(found) if p][:12]


def _hint_phrase_wins(state: State) -> dict[str, Any]:
    """Without ``solution()`` the hint is probed by playing its own phrases (and their case
    variants) as constant answers on fresh seeds: one that wins most of them leaks."""
    cfg = state.cfg
    budget = cfg.too_easy_max_steps // 2
    base = cfg.seed + _HINT_SEEDS
    tried = 0
    for phrase in _hint_phrases(state.hint or ""):
        for text in dict.fromkeys((phrase, phrase.lower(), phrase.upper(), phrase.title())):
            wins = played = 0
            for k in range(cfg.constant_episodes):
                if budget < state.turns:
                    return {"phrases_tried": tried, "note": "step budget spent"}
                if k == cfg.constant_screen and not wins:
                    break
                wins += _play_constant(state, [("step", text)], base + k, "hint phrase")
                played += 1
                budget -= min(state.turns, 2)
            tried += 1
            if played >= cfg.constant_episodes and wins / played > cfg.max_policy_win_rate:
                raise CheckFailed(
                    Stage.HINT_LEAK,
                    f"the hint gives the answer away: typing its phrase {text!r} wins {wins} "
                    f"of {played} fresh seeds",
                )
    return {"phrases_tried": tried}


def stage_hint_leak(state: State) -> dict[str, Any]:
    if not state.hint:
        return {"skipped": "no hint given"}
    found = answers(state)
    if not found:
        return _hint_phrase_wins(state)
    leaked = _leaks.hint_leaks(state.hint, found, min_fraction=state.cfg.hint_leak_min_fraction)
    if leaked is None:
        return {"answers_checked": len(found)}
    answer, hits, of = leaked
    if state.kind == "tool" and not _alone_wins(state, answer):
        return {
            "answers_checked": len(found),
            "note": "the hint states the final answer, but the answer alone does not win",
        }
    what = "the full solution" if answer.sequence else "the answer"
    raise CheckFailed(
        Stage.HINT_LEAK,
        f"the hint states {what} {_clip(answer.text, 60)} "
        f"(seed {answer.seed}; the hint contains the answer of {hits} of {of} seeds)",
    )


def stage_tool_schema(state: State) -> dict[str, Any]:
    if state.kind != "tool":
        return {"skipped": "not a tool environment"}
    details = check_schemas(state.tools)
    state.a.reset(state.cfg.seed)
    calls: list[tuple[str, Any]] = [("__no_such_tool__", {})]
    for spec in state.tools:
        calls.extend(bad_calls(spec))
    for name, arguments in calls:
        state.a.call_tool(
            name, arguments, "with bad arguments (tools must answer with an error text)"
        )
    details["bad_calls"] = len(calls)
    return details
