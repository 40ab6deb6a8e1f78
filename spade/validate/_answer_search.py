"""Answers found by playing, for the leak checks of environments without ``solution()``.

``solution()`` is optional, so the leak checks cannot depend on it: an observation that
prints its answer must fail whether or not the module says what the answer is. Two
sources of known answers, both from plays:

- the probe episodes that won (their final action, per seed);
- a search of the first instance's observation (and of its feedback to a wrong first
  answer, when the episode goes on after it): each of its tokens (numbers with their
  thousands separators removed, so "12,345" is typed as 12345) is typed as the answer.
  When one wins, every spot of the observation it sits at ("the words after 'is'")
  becomes a rule, and each rule's pick is typed on the other instance seeds. A rule whose
  pick wins ``leak_min_fraction`` of the instances it was tried on is an answer leak.
"""

from __future__ import annotations

from typing import Any

from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._leaks import Answer, plain_numbers, tokens
from spade.validate._probes import apply, words
from spade.validate._state import State
from spade.validate._verdict import Stage

#: Tokens of the first observation tried as answers (numbers and long words first).
MAX_TOKENS = 32
#: Instance seeds a rule found on the first instance is tried on.
RULE_SEEDS = 6
_TURNS = 2


def won_answers(state: State) -> list[Answer]:
    """The final action of every probe episode that won (one per seed)."""
    found: dict[int, Answer] = {}
    for episode in [*state.episodes, *state.extra_episodes]:
        if not state.win(episode.total) or not episode.events:
            continue
        move = episode.events[-1][0]
        if move[0] == "step" and isinstance(move[1], str) and tokens(move[1]):
            found.setdefault(episode.seed, Answer(episode.seed, move[1], tokens(move[1]), False))
    return list(found.values())


#: The move whose feedback the feedback search reads: an answer no task expects.
WRONG = "0"


def _wins(state: State, text: str, seed: int, after_wrong: bool = False) -> bool:
    """Does typing ``text`` win ``seed`` (after one wrong answer, with ``after_wrong``)?"""
    state.a.reset(seed)
    total = 0.0
    if after_wrong:
        result = apply(state.a, ("step", WRONG), f"at turn 1 (seed {seed}, feedback search)")
        if not isinstance(result, StepResult) or result.ended or state.win(result.reward):
            return False
        total = result.reward
    for turn in range(min(state.turns - int(after_wrong), _TURNS)):
        result = apply(state.a, ("step", text), f"at turn {turn + 1} (seed {seed}, leak search)")
        if isinstance(result, StepResult):
            total += result.reward
            if result.ended:
                break
    return state.win(total)


def _words(text: str) -> tuple[str, ...]:
    """Word and number tokens as typed (case kept; thousands separators dropped)."""
    return tuple(words(plain_numbers(text)))


def _ranked(found: tuple[str, ...]) -> list[str]:
    distinct = list(dict.fromkeys(found))
    numbers = [w for w in distinct if w.lstrip("-").replace(".", "", 1).isdigit()]
    rest = sorted((w for w in distinct if w not in numbers), key=lambda w: -len(w))
    return (numbers + rest)[:MAX_TOKENS]


def _rules(found: tuple[str, ...], answer: str) -> list[tuple[str, str, str]]:
    low = [w.lower() for w in found]
    rules = []
    for i, word in enumerate(found):
        if word != answer:
            continue
        if i > 0:
            rules += [("after", "first", low[i - 1]), ("after", "last", low[i - 1])]
        if i + 1 < len(found):
            rules += [("before", "first", low[i + 1]), ("before", "last", low[i + 1])]
    return list(dict.fromkeys(rules))


def _pick(found: tuple[str, ...], rule: tuple[str, str, str]) -> str | None:
    side, which, word = rule
    spots = [i for i, w in enumerate(found) if w.lower() == word]
    if not spots:
        return None
    at = spots[0] if which == "first" else spots[-1]
    j = at + 1 if side == "after" else at - 1
    return found[j] if 0 <= j < len(found) else None


def feedback(state: State, seed: int) -> str | None:
    """What ``seed`` answers to a wrong first answer while its episode goes on, else None."""
    state.a.reset(seed)
    result = apply(state.a, ("step", WRONG), f"at turn 1 (seed {seed}, feedback search)")
    if not isinstance(result, StepResult) or result.ended or state.win(result.reward):
        return None
    return result.observation


def search_feedback(state: State) -> dict[str, Any]:
    """The observation search on the feedback to a wrong first answer: a game that tells
    the answer and lets the agent go on is won by copying it (ANSWER_LEAK)."""
    if state.turns < 2:
        return {}
    return search_observation(state, feedback_of=lambda seed: feedback(state, seed))


def search_observation(state: State, feedback_of: Any = None) -> dict[str, Any]:
    """The observation search (see the module doc); raises ANSWER_LEAK on a leak. With
    ``feedback_of`` (seed -> text or None), the text searched is that feedback instead
    of the first observation, and every answer is typed after one wrong answer."""
    instances = state.instances
    first = instances[0]
    after = feedback_of is not None
    shown_text = feedback_of(first.seed) if after else first.first
    if shown_text is None:
        return {}
    shown = _words(shown_text)
    answer = next((w for w in _ranked(shown) if _wins(state, w, first.seed, after)), None)
    if answer is None:
        return {"searched_tokens": len(_ranked(shown))}
    state.found_answers.append(Answer(first.seed, answer, tokens(answer), False))
    others = instances[1 : 1 + RULE_SEEDS]
    best: tuple[int, tuple[str, str, str]] | None = None
    for rule in _rules(shown, answer):
        hits = 1
        for instance in others:
            text = feedback_of(instance.seed) if after else instance.first
            pick = _pick(_words(text), rule) if text is not None else None
            if pick is not None and _wins(state, pick, instance.seed, after):
                hits += 1
                state.found_answers.append(Answer(instance.seed, pick, tokens(pick), False))
        if best is None or hits > best[0]:
            best = (hits, rule)
        if hits >= state.cfg.leak_min_fraction * (1 + len(others)) and len(others) >= 3:
            side, which, word = rule
            where = (f"the feedback to a wrong answer ({WRONG!r}) gives away the answer and "
                     "the episode goes on" if after else "the observation gives away the answer")
            raise CheckFailed(
                Stage.ANSWER_LEAK,
                f"{where}: typing the word {side} the {which} "
                f"{word!r} wins {hits} of {1 + len(others)} seeds (seed {first.seed}: "
                f"{answer!r} in {shown_text!r:.80})",
            )
    return {"searched_tokens": len(_ranked(shown)), "best_rule_wins": best[0] if best else 0}
