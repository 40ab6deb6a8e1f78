"""Is the answer given away — by the observation, or by the hint?

Literal containment alone is a poor test: a multiple-choice question shows its answer among
the options, and "What is larger, 3 or 7?" shows 7. What makes an observation *leak* is
that the answer sits at a spot a policy can find without reasoning. So an observation leaks
when one extraction rule -- "the words right after the first (or last) occurrence of word
P" or "the words right before the first (or last) occurrence of word N" -- yields the
answer for most seeds. The hint is one text for every seed, so it leaks when it states the
whole solution sequence of any seed, or when it states the answer for a good share of the
seeds (a hint mentioning an answer that only one seed in eight has is a coincidence).
Everything is compared on lower-cased word/number tokens, so spacing, case and punctuation
do not matter; spelled-out numbers count as their digits ("forty-two" is 42), and a hint
that spells a number digit by digit ("4-2", "4 2") states it too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from spade.validate._probes import words


@dataclass(frozen=True)
class Answer:
    """What counts as the answer of one instance, from its ``solution()``."""

    seed: int
    text: str  # the answer as the agent would type it (for tool confirmation)
    tokens: tuple[str, ...]  # normalised word tokens of ``text``
    sequence: bool  # True when ``text`` joins a multi-action solution


_UNIT_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
               "fourteen fifteen sixteen seventeen eighteen nineteen")  # fmt: skip
_UNITS = {w: i for i, w in enumerate(_UNIT_WORDS.split())}
_TENS = dict(zip("twenty thirty forty fifty sixty seventy eighty ninety".split(),  # noqa: SIM905
                 range(20, 100, 10), strict=True))  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}


def _is_number_word(raw: list[str], start: int, j: int) -> bool:
    word = raw[j]
    if word in _UNITS or word in _TENS:
        return True
    if j == start:
        return False
    if word in _SCALES:
        return True
    return word == "and" and j + 1 < len(raw) and (raw[j + 1] in _UNITS or raw[j + 1] in _TENS)


def _numbers(raw: list[str]) -> list[str]:
    """Runs of number words become one digit token ("two hundred five" -> "205")."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        total = current = 0
        j = i
        while j < len(raw) and _is_number_word(raw, i, j):
            word = raw[j]
            if word in _UNITS:
                current += _UNITS[word]
            elif word in _TENS:
                current += _TENS[word]
            elif word in _SCALES:
                scale = _SCALES[word]
                if scale == 100:
                    current = max(current, 1) * 100
                else:
                    total += max(current, 1) * scale
                    current = 0
            j += 1
        if j > i:
            out.append(str(total + current))
            i = j
        else:
            out.append(raw[i])
            i += 1
    return out


_CLAUSE = re.compile(r"[,;:!?()\[\]{}\n]|\.(?!\d)")
#: A number written with thousands separators: "12,345", "1'000'000", "12_345", "12 345"
#: with a (narrow) no-break or thin space.
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:([,'_\u00a0\u202f\u2009])\d{3})(?:\1\d{3})*(?!\d|,\d)")
_SEPARATORS = re.compile(r"[,'_\u00a0\u202f\u2009]")


def plain_numbers(text: str) -> str:
    """``text`` with the thousands separators of its numbers removed ("12,345" -> 12345)."""
    return _GROUPED.sub(lambda m: _SEPARATORS.sub("", m.group(0)), text)


def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased word/number tokens; number words within one clause become digits, and
    numbers lose their thousands separators."""
    out: list[str] = []
    for clause in _CLAUSE.split(plain_numbers(text)):
        out += _numbers([w.lower() for w in words(clause)])
    return tuple(out)


_DIGIT_RUN = re.compile(r"(?<![\d.])\d(?:[ \t\-_/]?\d)+(?![\d.])")


def digit_runs(text: str) -> set[str]:
    """Numbers spelled digit by digit ("4 2", "4-2" -> "42"), besides the plain numbers."""
    return {re.sub(r"\D", "", m) for m in _DIGIT_RUN.findall(text)}


def answers_of(seed: int, solution: list[Any], kind: str, *, commands: int = 0) -> list[Answer]:
    """Answer candidates of one instance: the final answer / single action, or the sequence.

    ``commands`` final actions of a game solution are fixed commands (see
    :func:`command_suffix`): the answer is the last action before them.
    """
    if not solution:
        return []
    if kind == "tool":
        final = solution[-1]
        return [Answer(seed, final, tokens(final), False)] if isinstance(final, str) else []
    actions = [str(a) for a in solution]
    if len(actions) == 1:
        return [Answer(seed, actions[0], tokens(actions[0]), False)]
    joined = " ".join(actions)
    found = [Answer(seed, joined, tokens(joined), True)]
    core = actions[: len(actions) - commands] if commands else actions
    if core:
        found.append(Answer(seed, core[-1], tokens(core[-1]), False))
    return found


def command_suffix(solutions: list[list[Any]]) -> int:
    """How many final actions are one fixed command in every multi-action game solution.

    An action that ends every instance's solution alike ('submit', 'done') is a command,
    not an answer: it cannot leak anything. Needs two or more multi-action solutions, and
    always leaves at least one action.
    """
    multi = [[str(a).strip().lower() for a in s] for s in solutions if len(s) > 1]
    if len(multi) < 2:
        return 0
    count = 0
    while all(len(s) > count + 1 for s in multi) and len({s[-1 - count] for s in multi}) == 1:
        count += 1
    return count


def final_is_move(solutions: list[list[Any]]) -> bool:
    """True when final actions also occur mid-solution: they are moves, not answers."""
    middles = {str(a).strip().lower() for sol in solutions for a in sol[:-1]}
    return any(str(sol[-1]).strip().lower() in middles for sol in solutions if sol)


_SEP = "\x1f"  # never inside a token (tokens are word characters)


def _find(haystack: tuple[str, ...], needle: tuple[str, ...]) -> list[int]:
    """Token positions where ``needle`` starts in ``haystack``. Searched as text (C speed):
    a worker's observation at the size cap and a long answer made of one repeated token
    cost the parent a tuple comparison per position and token otherwise (seconds)."""
    n = len(needle)
    if not n or n > len(haystack):
        return []
    if n == 1:
        return [i for i, token in enumerate(haystack) if token == needle[0]]
    text = _SEP + _SEP.join(haystack) + _SEP
    pattern = _SEP + _SEP.join(needle) + _SEP
    index, pos = {}, 0
    for i, token in enumerate(haystack):
        index[pos] = i
        pos += len(token) + 1
    found, at = [], text.find(pattern)
    while at != -1:
        found.append(index[at])
        at = text.find(pattern, at + 1)
    return found


def contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    return bool(needle) and bool(_find(haystack, needle))


@dataclass(frozen=True)
class Leak:
    rule: str
    seeds: tuple[int, ...]
    total: int


def observation_leak(cases: list[tuple[Answer, str]], min_fraction: float) -> Leak | None:
    """An extraction rule that recovers the answer from the observation for most seeds.

    ``cases`` pairs each answer with its instance's first observation. Needs at least three
    instances; the rule must succeed on ``min_fraction`` of them.
    """
    usable = [(a, tokens(obs)) for a, obs in cases if a.tokens]
    if len(usable) < 3:
        return None
    need = max(2, math.ceil(min_fraction * len(usable) - 1e-9))
    votes: Counter[tuple[str, str, str]] = Counter()
    hits: dict[tuple[str, str, str], list[int]] = {}
    for answer, obs in usable:
        rules = set()
        for i in _find(obs, answer.tokens):
            end = i + len(answer.tokens)
            if i > 0:
                rules.add(("after", "first", obs[i - 1]))
                rules.add(("after", "last", obs[i - 1]))
            if end < len(obs):
                rules.add(("before", "first", obs[end]))
                rules.add(("before", "last", obs[end]))
        for rule in sorted(rules):
            if _extract(obs, rule, len(answer.tokens)) == answer.tokens:
                votes[rule] += 1
                hits.setdefault(rule, []).append(answer.seed)
    if not votes:
        return None
    rule, count = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: stable choice
    if count < need:
        return None
    side, which, word = rule
    text = f"the words {side} the {which} {word!r}"
    return Leak(rule=text, seeds=tuple(hits[rule]), total=len(usable))


def _extract(obs: tuple[str, ...], rule: tuple[str, str, str], n: int) -> tuple[str, ...]:
    side, which, word = rule
    positions = [i for i, w in enumerate(obs) if w == word]
    if not positions:
        return ()
    at = positions[0] if which == "first" else positions[-1]
    return obs[at + 1 : at + 1 + n] if side == "after" else obs[max(0, at - n) : at]


def hint_leaks(
    hint: str, answers: list[Answer], *, min_fraction: float
) -> tuple[Answer, int, int] | None:
    """The first leaked answer, with how many seeds' answers the hint states and of how many."""
    hint_tokens = tokens(hint)
    sequences = [a for a in answers if a.sequence and a.tokens]
    for answer in sequences:
        if contains(hint_tokens, answer.tokens):
            return answer, 1, len(sequences)
    singles = [a for a in answers if not a.sequence and a.tokens]
    runs = digit_runs(hint)
    found = [a for a in singles if contains(hint_tokens, a.tokens) or (
        len(a.tokens) == 1 and a.tokens[0] in runs)]
    if found and len(found) >= min_fraction * len(singles) - 1e-9:
        return found[0], len(found), len(singles)
    return None
