"""Stages about the task itself: is the answer hidden, hard to guess, reachable, and are
the tools well formed? They use the instances and probe episodes gathered earlier.
"""

from __future__ import annotations

from typing import Any

from spade.validate import _leaks
from spade.validate._answer_search import search_feedback, search_observation, won_answers
from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._hint_audit import run_audit
from spade.validate._probes import Move, apply
from spade.validate._state import State, check_return, normalise_solution
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


def _more_answers(state: State, firsts: dict[int, str]) -> list[_leaks.Answer]:
    """Answers of ``leak_topup`` fresh seeds, so a rate is not judged on eight samples."""
    found = []
    for k in range(state.cfg.leak_topup):
        seed = state.seed("leak", k)
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
        return {**_answers_by_play(state), **search_feedback(state)}
    search_feedback(state)
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


def _answers_by_play(state: State) -> dict[str, Any]:
    """No ``solution()``: the answers the probes won with, and the observation search."""
    details = search_observation(state)
    won = won_answers(state)
    state.found_answers.extend(won)
    firsts = {e.seed: e.first for e in [*state.episodes, *state.extra_episodes]}
    leak = _leaks.observation_leak([(a, firsts[a.seed]) for a in won],
                                   state.cfg.leak_min_fraction)  # fmt: skip
    if leak is not None:
        example = next(a for a in won if a.seed == leak.seeds[0])
        raise CheckFailed(
            Stage.ANSWER_LEAK,
            f"the observation gives away the answer the probes won with: for "
            f"{len(leak.seeds)} of {leak.total} won seeds it is {leak.rule} (seed "
            f"{example.seed}: {_clip(example.text, 50)} in {_clip(firsts[example.seed], 80)})",
        )
    return {**details, "won_answers": len(won)}


#: Extra times the final move of a won solution is sent when the episode goes on: a
#: correct answer repeated must not earn more than the return range allows.
_REPEATS = 3


def _moves(state: State, solution: list[Any]) -> list[Move]:
    if state.kind == "tool":
        *calls, final = solution
        moves: list[Move] = [("tool", c["name"], c.get("arguments", {})) for c in calls]
        return [*moves, ("step", final)]
    return [("step", a) for a in solution]


def _replay(state: State, seed: int, moves: list[Move]) -> tuple[float, str, list[Any]]:
    """Play ``moves`` from ``reset(seed)``, then the last one again while the episode goes
    on (up to ``_REPEATS`` times); (return, last observation, every result)."""
    last = state.a.reset(seed)
    total, results, ended = 0.0, [], False
    extra = [moves[-1]] * min(_REPEATS, max(0, state.turns - len(moves)))
    for turn, move in enumerate([*moves, *extra], start=1):
        if turn > len(moves) and (ended or not state.win(total)):
            break
        result = apply(state.a, move, f"at turn {turn} (seed {seed}, solution replay)")
        results.append(result)
        if isinstance(result, StepResult):
            total += result.reward
            last = result.observation
            ended = result.ended
            if ended and turn <= len(moves):
                break
    where = f"seed {seed}, solution replay" + (", its last move repeated" if extra else "")
    check_return(state, total, where)
    return total, last, results


def stage_solution(state: State) -> dict[str, Any]:
    """``solution()`` wins from a fresh reset; the first one is played twice on its seed
    and must play the same (no state carried from one episode to the next)."""
    solved = [i for i in state.instances if i.solution][: state.cfg.solution_seeds]
    if not solved:
        reason = (
            "no solution() defined" if not state.info.has_solution else "solution() returned None"
        )
        return {"skipped": reason}
    returns = []
    for k, instance in enumerate(solved):
        solution = instance.solution or []
        if len(solution) > state.info.max_turns:
            raise CheckFailed(
                Stage.SOLUTION,
                f"solution() for seed {instance.seed} needs "
                f"{len(solution)} turns but max_turns is {state.info.max_turns}",
            )
        moves = _moves(state, solution)
        total, last, results = _replay(state, instance.seed, moves)
        if not state.win(total):
            raise CheckFailed(
                Stage.SOLUTION,
                f"solution() does not win: replaying its "
                f"{len(moves)} move(s) from reset(seed={instance.seed}) gave return "
                f"{total:g} (success threshold {state.info.success_threshold:g}); "
                f"last observation: {_clip(last, 80)}",
            )
        _check_slow(state, instance.seed, total)
        if k == 0 and _replay(state, instance.seed, moves)[2] != results:
            raise CheckFailed(
                Stage.DETERMINISM,
                f"same seed and actions gave different results: solution() replayed a "
                f"second time on seed {instance.seed} played differently (the environment "
                "carries state from one episode to the next)",
            )
        returns.append(total)
    return {"seeds": [i.seed for i in solved], "returns": returns}


def _check_slow(state: State, seed: int, total: float) -> None:
    """``solution()`` that wins here must also win in the second worker, where each move
    arrives ``clock_gap_s`` after the observation: a win that needs a fast answer is one
    a language model (seconds per reply) never gets."""
    second = state.second
    slow = second.slow_solution if second is not None else None
    if slow is None or slow[0] != seed or state.win(slow[1]) or not state.win(total):
        return
    raise CheckFailed(
        Stage.DETERMINISM,
        f"same seed and actions gave different results: solution() for seed {seed} wins "
        f"when each move comes at once but returns {slow[1]:g} when it comes "
        f"{state.cfg.clock_gap_s:g} s after the observation (the outcome depends on how "
        "fast the player answers)",
    )


def stage_hint_leak(state: State) -> dict[str, Any]:
    """The hint audit's verdict (strings the hint spells out, played as answers), then the
    hint against every answer known: ``solution()``'s, or those the probes found."""
    if not state.hint:
        return {"skipped": "no hint given"}
    if state.fresh_calls is None:
        raise RuntimeError("the hint audit needs fresh workers")
    details = run_audit(state)
    # Without solution() the known answers are those the probes won with: a sample biased
    # towards the strings the hint spells out (the audit typed them), so a rate over it
    # says nothing. The audit's own rate over fresh seeds judged those strings above; only
    # a whole winning sequence spelled out in the hint is looked for here.
    found = answers(state) or [a for a in state.found_answers if a.sequence]
    if not found:
        return details
    leaked = _leaks.hint_leaks(state.hint, found, min_fraction=state.cfg.hint_leak_min_fraction)
    if leaked is not None and not leaked[0].sequence and answers(state):
        # one answer shared by half of eight seeds may be a small answer space's luck
        found = found + _more_answers(state, {})
        leaked = _leaks.hint_leaks(state.hint, found,
                                   min_fraction=state.cfg.hint_leak_min_fraction)
    if leaked is None:
        return {**details, "answers_checked": len(found)}
    answer, hits, of = leaked
    if state.kind == "tool" and not _alone_wins(state, answer):
        return {
            **details,
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
    state.a.reset(state.seed("tools", 0))
    calls: list[tuple[str, Any]] = [("__no_such_tool__", {})]
    for spec in state.tools:
        calls.extend(bad_calls(spec))
    for name, arguments in calls:
        state.a.call_tool(
            name, arguments, "with bad arguments (tools must answer with an error text)"
        )
    details["bad_calls"] = len(calls)
    return details
