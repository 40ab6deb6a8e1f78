"""The hint audit: does the hint carry a password instead of a method?

The designer is paid the hinted arm's success minus the unhinted arm's. The cheapest way
to that gap is an environment that accepts a fixed string as a win and a hint that spells
the string out -- plainly, reversed, in base64 or hex, or as simple arithmetic of numbers
it states ("4000 plus 321"). So every string the hint spells out in one of
those ways is played as a constant answer on fresh seeds; one that wins most of them
makes the environment invalid (stage HINT_LEAK), whether or not ``solution()`` exists.

Every way an environment could tell the audit from training is taken away: the audit
plays in fresh workers that look like a training instance (the hash seed training loads
with, the real date, no ``solution()`` call before, an answer arriving seconds after each
observation as a language model's does: each worker's delay is drawn per validation from a
range of realistic latencies, so neither a threshold nor a window on the latency is seen
only outside validation), and a string is typed again on the next turn when its first
answer did not end the episode (a password that is refused the first time).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import itertools
import math
import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spade.seeds import derive_seed
from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._leaks import tokens
from spade.validate._probes import apply
from spade.validate._verdict import Stage

if TYPE_CHECKING:
    from spade.validate._calls import Calls

#: At most this many plain strings, strings per other way of spelling, and in all.
_PLAIN = 12
_PER_KIND = 8
_MAX_CANDIDATES = 72
#: Turns a candidate gets: typed, and typed again when the episode goes on.
_TURNS = 2
_STOP_WORDS = ("the a an and or of to in on at is are be it its this that with for from by "
               "as not no you your try think about")  # fmt: skip
_STOP = frozenset(_STOP_WORDS.split())
_QUOTED = re.compile(r"[\"'“‘`]([^\"'”’`]{1,80})[\"'”’`]")
_EDGES = "\"'`“”‘’.,;:!?()[]{}<>"
_B64 = re.compile(r"^[A-Za-z0-9+/_-]{4,}={0,2}$")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2}){2,}$")


@dataclass
class Audit:
    """What the audit played: each candidate's wins and plays, and how it was derived."""

    tally: dict[str, list[int]] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    #: Strings that won their screening play but not the seeds after it (in one worker).
    faded: list[str] = field(default_factory=list)
    note: str = ""


def _printable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return text if 0 < len(text) <= 80 and text.isprintable() else None


def _decoded(chunk: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if _B64.match(chunk):
        padded = chunk + "=" * (-len(chunk) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                text = _printable(decode(padded))
            except (binascii.Error, ValueError):
                continue
            if text:
                found.append((text, "base64"))
                break
    if _HEX.match(chunk):
        text = _printable(bytes.fromhex(chunk))
        if text:
            found.append((text, "hex"))
    if len(chunk) >= 3:
        found.append((chunk[::-1], "reversed"))
        if any(c.isalpha() for c in chunk):
            found.append((codecs.encode(chunk, "rot13"), "rot13"))
    return found


def _numbers(hint: str) -> list[int]:
    found: list[int] = []
    for token in tokens(hint):
        if token.lstrip("-").isdigit() and len(token) <= 12:
            found.append(int(token))
    return list(dict.fromkeys(found))[:2]


def _arithmetic(numbers: list[int]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for n in numbers:
        out += [(str(n + 1), "arithmetic"), (str(n - 1), "arithmetic"),
                (str(2 * n), "arithmetic"), (str(abs(n))[::-1].lstrip("0") or "0", "reversed")]
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            out += [(str(a + b), "arithmetic"), (str(a - b), "arithmetic"),
                    (str(b - a), "arithmetic"), (str(a * b), "arithmetic")]
    return out


_DIGIT_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])}
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCES = re.compile(r"[.!?;:\n]+")


def _spelled(hint: str) -> list[tuple[str, str]]:
    """Acrostics (first letters of a sentence's words or of the hint's capitalised words),
    neighbouring words joined, and numbers spelled digit by digit in words."""
    out: list[tuple[str, str]] = []
    for part in [hint, *_SENTENCES.split(hint)]:
        letters = [w[0] for w in _WORDS.findall(part) if w[0].isalpha()]
        if len(letters) >= 3:
            out.append(("".join(letters).lower(), "acrostic"))
    capitals = [w[0] for w in _WORDS.findall(hint) if w[0].isupper()]
    if len(capitals) >= 3:
        out.append(("".join(capitals).lower(), "acrostic"))
    words = _WORDS.findall(hint)
    digits: list[str] = []
    for word in [*words, ""]:
        if word.lower() in _DIGIT_WORDS:
            digits.append(_DIGIT_WORDS[word.lower()])
            continue
        if len(digits) >= 2:
            out.append(("".join(digits), "spelled digits"))
        digits = []
    quoted = [m.strip() for m in _QUOTED.findall(hint)]
    for seq in (quoted, [w for w in words if w.lower() not in _STOP]):
        for a, b in itertools.pairwise(seq):
            if len(a) + len(b) <= 80:
                out.append((a + b, "joined"))
    return out


def _unusual(chunk: str) -> tuple[bool, int]:
    """Code-like strings first (digits, inner capitals, symbols), then longer ones."""
    plain_word = chunk.isalpha() and (chunk.islower() or chunk.istitle())
    return plain_word, -len(chunk)


def candidates(hint: str) -> list[tuple[str, str]]:
    """``(string, how it is spelled out)`` of every string worth typing, plain ones first."""
    chunks = [c.strip(_EDGES) for c in hint.split()]
    chunks = [c for c in chunks if c and len(c) <= 80]
    plain = [m.strip() for m in _QUOTED.findall(hint)]
    plain += [t for t in tokens(hint) if t.lstrip("-").isdigit()]
    plain += sorted((c for c in chunks if c.lower() not in _STOP), key=_unusual)
    plain = list(dict.fromkeys(p for p in plain if p))[:_PLAIN]
    # longer strings first: a code word is more often long than a common word is
    sources = sorted(dict.fromkeys([*plain, *chunks]), key=lambda c: -len(c))
    decoded = [d for c in sources for d in _decoded(c)]
    decoded += _spelled(hint)
    ways = ("base64", "hex", "spelled digits", "acrostic", "reversed", "rot13", "joined")
    kinds = {how: [d for d in decoded if d[1] == how][:_PER_KIND] for how in ways}
    found = [(p, "plain") for p in plain] + [d for how in ways[:4] for d in kinds[how]]
    found += _arithmetic(_numbers(hint)) + [d for how in ways[4:] for d in kinds[how]]
    seen: set[str] = set()
    out = []
    for text, how in found:
        if text and text not in seen:
            seen.add(text)
            out.append((text, how))
    return out[:_MAX_CANDIDATES]


def _wins(state: Any, calls: Calls, text: str, seed: int) -> tuple[bool, int]:
    """Type ``text`` (again on the next turn while the episode goes on); (won, steps)."""
    calls.reset(seed)
    total, steps = 0.0, 0
    for turn in range(min(state.turns, _TURNS)):
        result = apply(calls, ("step", text), f"at turn {turn + 1} (seed {seed}, hint audit)")
        steps += 1
        if isinstance(result, StepResult):
            total += result.reward
            if result.ended or state.win(total):
                break
    return bool(state.win(total)), steps


def audit_hint(state: Any, calls: Calls, budget: int | None = None) -> Audit:
    """Play every candidate on one fresh seed; one that wins is played on
    ``constant_episodes`` fresh seeds in all, and on as many again when it won more than
    ``max_policy_win_rate`` of them (step budget: half the too-easy budget)."""
    cfg = state.cfg
    budget = cfg.too_easy_max_steps // 2 if budget is None else budget
    audit = Audit()
    n = cfg.constant_episodes
    seeds = [state.seed("hint", k) for k in range(2 * n)]
    for text, how in candidates(state.hint or ""):
        wins = played = 0
        for k, seed in enumerate(seeds):
            if budget < _TURNS:
                audit.note = "step budget spent"
                return audit
            if (k == 1 and not wins) or (k == n and wins / played <= cfg.max_policy_win_rate):
                break  # no winner, or judged on n seeds (over the limit: n more confirm)
            won, steps = _wins(state, calls, text, seed)
            wins += won
            played += 1
            budget -= steps
        audit.tally[text] = [wins, played]
        audit.how[text] = how
        if wins and played > 1 and wins / played <= cfg.max_policy_win_rate:
            audit.faded.append(text)
    return audit


def answer_delays(state: Any) -> list[float]:
    """One delay per audit worker, drawn log-uniformly from each of ``audit_delays_s``'s
    ranges by this validation's secret seed: how long after each observation the audit's
    answers arrive (its clock jumps that far per call)."""
    rng = random.Random(derive_seed(state.base_seed, "validate", "audit delays", bits=63))
    return [math.exp(rng.uniform(math.log(low), math.log(high)))
            for low, high in state.cfg.audit_delays_s]


def run_audit(state: Any) -> dict[str, Any]:
    """The audit in one fresh training-like worker per answer delay (see the module doc);
    HINT_LEAK on the first string that wins most fresh seeds in any of them. Strings that
    faded (won their first play only) are then played in fresh workers, once."""
    details: dict[str, Any] = {"hint_strings_tried": 0, "answer_delays_s": []}
    faded: dict[str, float] = {}
    for delay in answer_delays(state):
        calls = state.fresh_calls(delay)
        try:
            audit = audit_hint(state, calls)
        finally:
            calls.handle.close()
        judge(state, audit, delay)
        details["hint_strings_tried"] = max(details["hint_strings_tried"], len(audit.tally))
        details["answer_delays_s"].append(round(delay, 1))
        if audit.note:
            details["note"] = audit.note
        for text in audit.faded:
            faded.setdefault(text, delay)
    if faded:
        details["fresh_workers"] = _fresh_plays(state, faded)
    return details


def judge(state: Any, audit: Audit, delay: float = 0.0) -> dict[str, Any]:
    """HINT_LEAK when a string the hint spells out wins most fresh seeds."""
    cfg = state.cfg
    for text, (wins, played) in audit.tally.items():
        if played >= cfg.constant_episodes and wins / played > cfg.max_policy_win_rate:
            how = audit.how.get(text, "plain")
            spelled = "spells out" if how == "plain" else f"spells out ({how})"
            raise CheckFailed(
                Stage.HINT_LEAK,
                f"the hint {spelled} an answer that wins regardless of the instance: typing "
                f"{text!r:.60} wins {wins} of {played} fresh seeds (answers {delay:.1f} s "
                "after each observation)",
            )
    details: dict[str, Any] = {"hint_strings_tried": len(audit.tally)}
    if audit.note:
        details["note"] = audit.note
    return details


#: Fresh workers a faded string is played in (one seed each; it must win in every one: a
#: fair four-option letter does so 0.4% of the times it gets here), and how many strings.
FRESH_PLAYS = 4
_FADED_MAX = 2


def _fresh_plays(state: Any, faded: dict[str, float]) -> int:
    """A string that won its first play and then stopped winning is played once in each of
    ``FRESH_PLAYS`` fresh workers: an answer that works only in a young process (a
    training instance plays a few episodes; a validation worker plays many) wins there."""
    started = 0
    for text, delay in list(faded.items())[:_FADED_MAX]:
        wins = 0
        for j in range(FRESH_PLAYS):
            calls = state.fresh_calls(delay)
            started += 1
            try:
                wins += _wins(state, calls, text, state.seed("fresh", j))[0]
            finally:
                calls.handle.close()
        if wins == FRESH_PLAYS:
            raise CheckFailed(
                Stage.HINT_LEAK,
                f"the hint spells out an answer that wins in a fresh process: typing "
                f"{text!r:.60} wins {wins} of {FRESH_PLAYS} fresh seeds, each in a new worker "
                "(in one worker it stopped winning after its first episodes)",
            )
    return started
