"""TOO_EASY: random and trivial policies must not win often.

Two episodes per policy (the shared probe plan) cannot tell a 4-option quiz (25% by
chance) from a coin flip: one lucky policy winning 2 of 2 is not evidence. So the stage
first tops up the sample, then decides on rates measured over enough episodes:

- every policy that won at least once gets ``too_easy_episodes`` episodes in all (new
  seeds), and when the environment is cheap (the extra steps fit in
  ``too_easy_cheap_steps``, as for one-shot games) every policy does; no top-up exceeds
  ``too_easy_max_steps`` steps in all;
- *pooled*: the mean of the per-policy win rates (each policy weighs the same, however
  many episodes it played, so topping up the winners does not bias it) must not exceed
  ``max_win_rate``;
- *best policy*: no single policy may win more than ``max_policy_win_rate`` of its
  episodes -- judged once it has ``too_easy_episodes`` episodes, or earlier only if it
  won every one of at least two (when long episodes make topping up too costly).

With the defaults (8 episodes, 0.2 pooled, 0.5 per policy) a 4-option multiple-choice
quiz passes (no probe policy picks letters more than a few percent of the time, and even a
policy guessing a letter every time would need 5 of 8 at p = 0.25, about 3% of the time),
while an always-winning env or an answer a trivial policy types ("0", "1", "", an echoed
word) for most seeds is caught. A fair 50/50 coin flip between "0" and "1" is borderline
(two policies near 50%, pooled about 0.19): it is caught when one of them wins 5 of 8 or
the pooled mean passes 0.2; raise ``too_easy_episodes`` for a sharper line.

Constant answers the probe policies never type are tried too (``constant_answers``):
case variants ("Yes", "NO", "True"), small numbers ("2", "3", "-1"), option letters, and
every solution that two or more instance seeds share, replayed on fresh seeds (an answer
that is the same for most seeds). Each is played on ``constant_screen`` fresh seeds; one
that wins any of them is played on ``constant_episodes`` seeds in all and fails the stage
when it wins more than ``max_policy_win_rate`` of them (the 71% "Yes" and the 60% "NO"
of real environments are caught -- a 60% answer loses all three screening seeds 6% of
the time; a fair yes/no coin flip, 50%, is not caught by this rule).
"""

from __future__ import annotations

from typing import Any

from spade.validate._calls import Calls
from spade.validate._failure import CheckFailed
from spade.validate._leaks import tokens
from spade.validate._probes import Episode, apply
from spade.validate._state import EPS, State, check_return, extra_probe
from spade.validate._verdict import Stage

#: Answers no probe policy types, tried as constants on fresh seeds (games and tools).
CONSTANTS = ("Yes", "YES", "No", "NO", "True", "False", "TRUE", "FALSE", "2", "3", "-1",
             "A", "B", "C", "D")  # fmt: skip
#: Turns a constant answer gets: one that solves an instance does so when first typed (a
#: shared solution is replayed whole).
CONSTANT_TURNS = 2


def _tally(state: State) -> dict[str, list[int]]:
    per_policy: dict[str, list[int]] = {}
    for episode in [*state.episodes, *state.extra_episodes]:
        wins = per_policy.setdefault(episode.policy, [0, 0])
        wins[0] += state.win(episode.total)
        wins[1] += 1
    return per_policy


def _top_up(state: State) -> None:
    """Play more episodes of the policies that need them, within the step budgets."""
    cfg = state.cfg
    target = cfg.too_easy_episodes
    per_policy = _tally(state)
    turns: dict[str, float] = {}
    for episode in state.episodes:
        turns.setdefault(episode.policy, 0.0)
        turns[episode.policy] += max(1, episode.turns) / per_policy[episode.policy][1]
    missing = {p: max(0, target - n) for p, (_, n) in per_policy.items()}
    cost_all = sum(missing[p] * turns.get(p, state.turns) for p in missing)
    cheap = cost_all <= cfg.too_easy_cheap_steps
    names = list(per_policy)
    budget = float(cfg.too_easy_max_steps)
    for name in names:
        wins, played = per_policy[name]
        if not (cheap or wins):
            continue
        for j in range(played, target):
            if budget < turns.get(name, state.turns):
                return
            episode = extra_probe(state, name, j)
            check_return(
                state,
                episode.total,
                f"seed {episode.seed}, policy {episode.policy!r}, {episode.turns} turns",
            )
            state.extra_episodes.append(episode)
            budget -= max(1, episode.turns)


def play_constant(state: State, moves: list[Any], seed: int, label: str,
                  calls: Calls | None = None) -> bool:
    """Reset ``seed`` and send ``moves`` (the last one repeated) until the episode ends
    (on the first worker unless ``calls`` says otherwise)."""
    calls = calls or state.a
    calls.reset(seed)
    total = 0.0
    for turn in range(min(state.turns, max(len(moves), CONSTANT_TURNS))):
        move = moves[min(turn, len(moves) - 1)]
        result = apply(calls, move, f"at turn {turn + 1} (seed {seed}, {label})")
        if not isinstance(result, str):
            total += result.reward
            if result.ended:
                break
    check_return(state, total, f"seed {seed}, {label}")
    return state.win(total)


def _candidates(state: State) -> list[tuple[str, list[Any], int | None, int]]:
    """(label, moves, seed it came from, screening seeds) of every constant answer worth
    trying."""
    screen = state.cfg.constant_screen
    found: list[tuple[str, list[Any], int | None, int]] = []
    seen: set[str] = set()
    counts: dict[str, int] = {}
    for instance in state.instances:
        counts[repr(instance.solution)] = counts.get(repr(instance.solution), 0) + 1
    for instance in state.instances:
        solution = instance.solution
        if not solution or counts[repr(solution)] < 2:
            continue  # an answer shared by most seeds shows up twice among eight
        moves: list[Any]
        if state.kind == "tool":
            *calls, final = solution
            moves = [("tool", c["name"], c.get("arguments", {})) for c in calls]
            moves.append(("step", final))
        else:
            moves = [("step", str(a)) for a in solution]
        key = repr(moves)
        if key not in seen:
            seen.add(key)
            shown = repr(moves[0][1]) if len(moves) == 1 else f"{len(moves)} moves"
            found.append((f"seed {instance.seed}'s solution ({shown[:60]})", moves,
                          instance.seed, screen))  # fmt: skip
    plausible = _plausible(state)
    for text in plausible:
        found.append((f"the constant answer {text!r}", [("step", text)], None, screen))
    for text in dict.fromkeys(state.edge_wins):  # answers right for no sound task that won
        if text not in plausible:
            found.append((f"the constant answer {text[:20]!r}", [("step", text)], None, 1))
    return found


def _plausible(state: State) -> list[str]:
    """Constants worth playing: all of them without solutions; with solutions, those that
    occur (any case, numbers canonical) in some instance's final answer -- a constant no
    answer contains cannot be the answer."""
    solutions = [i.solution for i in state.instances]
    if not solutions or any(not s for s in solutions):
        return list(CONSTANTS)
    seen: set[str] = set()
    for solution in solutions:
        final = solution[-1] if solution else ""
        seen.update(tokens(final if isinstance(final, str) else repr(final)))
    return [c for c in CONSTANTS if tokens(c) and tokens(c)[0] in seen]


def constant_answers(state: State) -> dict[str, Any]:
    """The constant-answer probe (see the module doc); raises CheckFailed on a winner."""
    cfg = state.cfg
    budget = float(cfg.too_easy_max_steps)
    n = cfg.constant_episodes
    every = [state.seed("constant", k) for k in range(2 * n + 1)]
    limit = cfg.max_policy_win_rate + EPS
    tried = 0
    for label, moves, origin, screen in _candidates(state):
        seeds = [seed for seed in every if seed != origin]
        wins = played = 0
        for k, seed in enumerate(seeds[: 2 * n]):
            if budget < state.turns:
                return {"constants_tried": tried, "note": "step budget spent"}
            if k == screen and not wins:
                break  # not a winner on the screening seeds
            if k == n and wins / played <= limit:
                break  # judged: a constant over the limit is confirmed on n more seeds
            wins += play_constant(state, moves, seed, label)
            played += 1
            budget -= min(max(len(moves), CONSTANT_TURNS), state.turns)
        tried += 1
        if played >= n and wins / played > limit:
            raise CheckFailed(
                Stage.TOO_EASY,
                f"{label} wins {wins} of {played} fresh seeds (limit "
                f"{cfg.max_policy_win_rate:.0%}): one fixed answer solves most instances",
                constant=label,
            )
    return {"constants_tried": tried}


def stage_too_easy(state: State) -> dict[str, Any]:
    details = _policy_rates(state)
    return {**details, **constant_answers(state)}


def _policy_rates(state: State) -> dict[str, Any]:
    _top_up(state)
    cfg = state.cfg
    per_policy = _tally(state)
    rates = {p: w / n for p, (w, n) in per_policy.items()}
    pooled = sum(rates.values()) / len(rates)
    episodes: list[Episode] = [*state.episodes, *state.extra_episodes]
    shown = {k: f"{w}/{n}" for k, (w, n) in per_policy.items()}
    details = {"win_rate": round(pooled, 4), "episodes": len(episodes), "wins_per_policy": shown}
    threshold = state.info.success_threshold
    if pooled > cfg.max_win_rate + EPS:
        raise CheckFailed(
            Stage.TOO_EASY,
            f"random and trivial policies win too often: on average {pooled:.0%} of their "
            f"episodes reached the success threshold {threshold:g} over {len(episodes)} "
            f"probe episodes (limit {cfg.max_win_rate:.0%}; wins per policy: "
            + ", ".join(f"{k} {v}" for k, v in shown.items())
            + ")",
            **details,
        )
    judged = [
        (rate, name)
        for name, rate in rates.items()
        if per_policy[name][1] >= cfg.too_easy_episodes
        or (per_policy[name][0] == per_policy[name][1] >= 2)
    ]
    if judged:
        rate, name = min(judged, key=lambda rn: -rn[0])  # the first of the best (plan order)
        if rate > cfg.max_policy_win_rate + EPS:
            w, n = per_policy[name]
            raise CheckFailed(
                Stage.TOO_EASY,
                f"the trivial policy {name!r} wins {w} of {n} episodes "
                f"(limit {cfg.max_policy_win_rate:.0%})",
                **details,
            )
    return details
