"""The dynamic stages of the battery, as functions over one shared validation state.

Each stage reads what earlier stages gathered (instances, recorded probe episodes) and
returns the details recorded in its :class:`CheckResult`, or raises :class:`CheckFailed`.
Stages share work on purpose: the probe episodes played once serve the type, reward,
termination and too-easy checks, and are replayed by a second worker for determinism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from spade.sandbox._types import EnvInfo
from spade.validate import _leaks
from spade.validate._calls import Calls, StepResult
from spade.validate._config import ValidationConfig
from spade.validate._failure import CheckFailed
from spade.validate._probes import (
    GAME_POLICIES,
    TOOL_POLICIES,
    Context,
    Episode,
    Move,
    apply,
    play,
    policy_rng,
    random_arguments,
)
from spade.validate._tool_schema import bad_calls, check_schemas
from spade.validate._verdict import Stage

_EPS = 1e-9


@dataclass
class Instance:
    """One seed's instance: first observation and (normalised) solution."""

    seed: int
    first: str
    solution: list[Any] | None


@dataclass
class State:
    """Everything the stages share."""

    cfg: ValidationConfig
    source: str
    hint: str | None
    info: EnvInfo
    a: Calls
    tools: list[dict[str, Any]]
    b: Calls | None = None
    instances: list[Instance] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def turns(self) -> int:
        return max(1, min(self.info.max_turns, self.cfg.max_turns_cap))

    def win(self, total: float) -> bool:
        return total >= self.info.success_threshold - _EPS


def check_info(info: EnvInfo, cfg: ValidationConfig, class_name: str, kind: str) -> dict[str, Any]:
    """LOAD: the loaded class is the one the source defines, with sane class attributes."""
    if info.class_name != class_name:
        raise CheckFailed(
            Stage.LOAD,
            f"the sandbox loaded class {info.class_name!r} but the source defines {class_name!r}",
        )
    if info.kind != kind:
        raise CheckFailed(
            Stage.LOAD,
            f"{class_name} behaves as a {info.kind} environment but "
            f"its source declares a {kind} environment",
        )
    turns = info.max_turns
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise CheckFailed(Stage.LOAD, f"max_turns must be a positive integer, got {turns!r}")
    threshold = info.success_threshold
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
    ):
        raise CheckFailed(
            Stage.LOAD, f"success_threshold must be a finite number, got {threshold!r}"
        )
    if threshold > cfg.return_range[1] + _EPS:
        raise CheckFailed(
            Stage.LOAD,
            f"success_threshold {threshold} is above the highest "
            f"allowed return {cfg.return_range[1]}; no episode could win",
        )
    return {
        "class_name": info.class_name,
        "kind": info.kind,
        "max_turns": turns,
        "success_threshold": threshold,
        "has_solution": info.has_solution,
    }


def _normalise_solution(value: Any, kind: str, seed: int) -> list[Any] | None:
    where = f"solution() after reset(seed={seed})"
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise CheckFailed(
            Stage.SOLUTION, f"{where} must return a list or None, got {type(value).__name__}"
        )
    if not value:
        raise CheckFailed(Stage.SOLUTION, f"{where} returned an empty list")
    if kind == "tool":
        *calls, final = value
        if not isinstance(final, str):
            raise CheckFailed(
                Stage.SOLUTION,
                f"{where}: the last item must be the final answer "
                f"string, got {type(final).__name__}",
            )
        for call in calls:
            if not (
                isinstance(call, dict)
                and isinstance(call.get("name"), str)
                and isinstance(call.get("arguments", {}), dict | str)
            ):
                raise CheckFailed(
                    Stage.SOLUTION,
                    f"{where}: tool calls must be "
                    f"{{'name': str, 'arguments': dict}}, got {call!r:.80}",
                )
        return list(value)
    actions = []
    for action in value:
        if isinstance(action, bool) or not isinstance(action, str | int | float):
            raise CheckFailed(
                Stage.SOLUTION, f"{where}: actions must be strings, got {type(action).__name__}"
            )
        actions.append(action if isinstance(action, str) else str(action))
    return actions


def collect_instances(state: State) -> None:
    """First observation and solution for each instance seed (reused by later stages)."""
    for i in range(state.cfg.instance_seeds):
        seed = state.cfg.seed + i
        first = state.a.reset(seed)
        solution = None
        if state.info.has_solution:
            solution = _normalise_solution(state.a.solution(seed), state.kind, seed)
        state.instances.append(Instance(seed, first, solution))


def probe_plan(state: State) -> list[tuple[int, str]]:
    """(seed, policy) of every probe episode, policies interleaved."""
    names = list(TOOL_POLICIES if state.kind == "tool" else GAME_POLICIES)
    base = state.cfg.seed + state.cfg.instance_seeds
    plan = []
    for j in range(state.cfg.episodes_per_policy):
        for p, name in enumerate(names):
            plan.append((base + j * len(names) + p, name))
    return plan


def play_probes(state: State, plan: list[tuple[int, str]]) -> None:
    policies = TOOL_POLICIES if state.kind == "tool" else GAME_POLICIES
    for index, (seed, name) in enumerate(plan, start=len(state.episodes)):
        episode = play(
            state.a,
            seed,
            name,
            policies[name],
            rng=policy_rng(state.cfg.seed, name, index),
            max_turns=state.turns,
            tools=state.tools,
        )
        low, high = state.cfg.return_range
        if not low - _EPS <= episode.total <= high + _EPS:
            raise CheckFailed(
                Stage.REWARDS,
                f"episode return {episode.total:g} is outside "
                f"[{low:g}, {high:g}] (seed {seed}, policy {name!r}, "
                f"{episode.turns} turns)",
            )
        state.episodes.append(episode)


def stage_types(state: State) -> dict[str, Any]:
    collect_instances(state)
    plan = probe_plan(state)
    play_probes(state, plan[:1])
    return {
        "instance_seeds": [i.seed for i in state.instances],
        "max_observation_chars": max(len(i.first) for i in state.instances),
    }


def stage_rewards(state: State) -> dict[str, Any]:
    play_probes(state, probe_plan(state)[len(state.episodes) :])
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


def _compare_episode(calls: Calls, episode: Episode, who: str) -> int:
    first = calls.reset(episode.seed)
    if first != episode.first:
        raise _nondeterministic(
            episode.seed, "the first observation", _differ(episode.first, first), who
        )
    for turn, (move, recorded) in enumerate(episode.events, start=1):
        result = apply(calls, move, f"at turn {turn} (seed {episode.seed}, replay)")
        diff = _differ(recorded, result)
        if diff:
            raise _nondeterministic(
                episode.seed, f"turn {turn} ({move[0]} {_clip(move[1:], 40)})", diff, who
            )
    return 1 + len(episode.events)


def _nondeterministic(seed: int, where: str, diff: str | None, who: str) -> CheckFailed:
    return CheckFailed(
        Stage.DETERMINISM,
        f"same seed and actions gave different results: seed {seed}, {where}: {diff} ({who})",
    )


def stage_determinism(state: State, load_second: Any) -> dict[str, Any]:
    chosen = sorted(state.episodes, key=lambda e: -e.turns)[: state.cfg.determinism_episodes]
    compared = _compare_episode(state.a, chosen[0], "same worker, replayed later") if chosen else 0
    b = load_second()
    who = f"first worker vs a second worker with a different hash seed {state.cfg.hash_seeds[1]}"
    for instance in state.instances:
        first = b.reset(instance.seed)
        if first != instance.first:
            raise _nondeterministic(
                instance.seed, "the first observation", _differ(instance.first, first), who
            )
        if state.info.has_solution:
            solution = _normalise_solution(b.solution(instance.seed), state.kind, instance.seed)
            if solution != instance.solution:
                raise _nondeterministic(
                    instance.seed, "solution()", _differ(instance.solution, solution), who
                )
        compared += 1
    for episode in chosen:
        compared += _compare_episode(b, episode, who)
    return {
        "hash_seeds": list(state.cfg.hash_seeds),
        "episodes_replayed": len(chosen),
        "results_compared": compared,
    }


def _fingerprint(instance: Instance) -> str:
    return repr((instance.first, instance.solution))


def stage_variety(state: State) -> dict[str, Any]:
    n = len(state.instances)
    need = max(2, math.ceil(state.cfg.min_distinct_fraction * n - _EPS))
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


def answers(state: State) -> list[_leaks.Answer]:
    """Answer candidates of every instance (final actions that are mere moves left out)."""
    solutions = [i.solution for i in state.instances if i.solution]
    moves = state.kind == "game" and _leaks.final_is_move(solutions)
    found = []
    for instance in state.instances:
        if instance.solution:
            for answer in _leaks.answers_of(instance.seed, instance.solution, state.kind):
                if not (moves and not answer.sequence and len(instance.solution) > 1):
                    found.append(answer)
    return found


def _alone_wins(state: State, answer: _leaks.Answer) -> bool:
    """Tool envs: does submitting the answer with no tool calls win?"""
    state.a.reset(answer.seed)
    return state.win(state.a.step(answer.text, f"(seed {answer.seed}, answer alone)").reward)


def stage_answer_leak(state: State) -> dict[str, Any]:
    found = answers(state)
    if not found:
        return {"skipped": "no solution to compare against"}
    firsts = {i.seed: i.first for i in state.instances}
    for sequence in (True, False):
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


def stage_too_easy(state: State) -> dict[str, Any]:
    per_policy: dict[str, list[int]] = {}
    for episode in state.episodes:
        wins = per_policy.setdefault(episode.policy, [0, 0])
        wins[0] += state.win(episode.total)
        wins[1] += 1
    total_wins = sum(w for w, _ in per_policy.values())
    rate = total_wins / len(state.episodes)
    details = {
        "win_rate": round(rate, 4),
        "episodes": len(state.episodes),
        "wins_per_policy": {k: f"{w}/{n}" for k, (w, n) in per_policy.items()},
    }
    worst, (w, n) = max(per_policy.items(), key=lambda kv: kv[1][0] / kv[1][1])
    threshold = state.info.success_threshold
    if rate > state.cfg.max_win_rate + _EPS:
        raise CheckFailed(
            Stage.TOO_EASY,
            f"random and trivial policies win too often: "
            f"{total_wins} of {len(state.episodes)} probe episodes ({rate:.0%}) "
            f"reached the success threshold {threshold:g} (limit "
            f"{state.cfg.max_win_rate:.0%})",
            **details,
        )
    if w / n > state.cfg.max_policy_win_rate + _EPS:
        raise CheckFailed(
            Stage.TOO_EASY,
            f"the trivial policy {worst!r} wins {w} of {n} episodes "
            f"(limit {state.cfg.max_policy_win_rate:.0%})",
            **details,
        )
    return details


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


def stage_hint_leak(state: State) -> dict[str, Any]:
    if not state.hint:
        return {"skipped": "no hint given"}
    found = answers(state)
    if not found:
        return {"skipped": "no solution to compare against"}
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
