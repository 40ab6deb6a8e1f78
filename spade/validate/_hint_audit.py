"""The hint audit: does the hint carry a password instead of a method?

The designer is paid the hinted arm's success minus the unhinted arm's. The cheapest way
to that gap is an environment that accepts a fixed string as a win and a hint that spells
the string out -- plainly, reversed, in base64 or hex, or as simple arithmetic of numbers
it states ("4000 plus 321"; see :mod:`spade.validate._hint_strings`). So every string the
hint spells out is played as a constant answer on fresh seeds; one that wins most of them
makes the environment invalid (stage HINT_LEAK), whether or not ``solution()`` exists. One
that wins only some instances is a password too, since a constant the unhinted arm does
not type is pure regret on every instance it wins: unless ``solution()`` says it is the
answer of the instances it won and the answers come from a small space (a die's face, an
option letter), or, without ``solution()``, an instance it won shows it or the same
string a letter or digit away and random strings of its shape win about as often.

Every way an environment could tell the audit from training is taken away: the audit
plays in fresh workers that look like a training instance (the hash seed training loads
with, the real date, no ``solution()`` call before, an answer arriving seconds after each
observation as a language model's does: each worker's delay is drawn per validation from a
range of realistic latencies, so neither a threshold nor a window on the latency is seen
only outside validation), and a string is typed again on the next turn when its first
answer did not end the episode (a password that is refused the first time), or typed
second after a first answer of another kind (a password that opens only after a
different first try). Each worker screens every string on seeds of its own.
"""

from __future__ import annotations

import difflib
import math
import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spade.seeds import derive_seed
from spade.validate._calls import StepResult
from spade.validate._failure import CheckFailed
from spade.validate._hint_strings import candidates, neighbours, same_shape
from spade.validate._leaks import tokens
from spade.validate._probes import apply
from spade.validate._too_easy import CONSTANTS
from spade.validate._verdict import Stage

if TYPE_CHECKING:
    from spade.validate._calls import Calls

#: Turns a candidate gets: typed, and typed again when the episode goes on.
_TURNS = 2


@dataclass
class Audit:
    """What the audit played: each candidate's wins and plays, and how it was derived."""

    tally: dict[str, list[int]] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    #: Strings that won their screening play but not the seeds after it (in one worker).
    faded: list[str] = field(default_factory=list)
    #: The moves each string won with (typed first, or after a filler answer).
    moves: dict[str, list[str]] = field(default_factory=dict)
    #: Strings judged against their neighbours: the most wins a neighbour got.
    control: dict[str, int] = field(default_factory=dict)
    #: The fresh seeds each judged string won.
    won_seeds: dict[str, list[int]] = field(default_factory=dict)
    #: Strings judged against ``solution()``: (won instances whose own answer it is not,
    #: or all of them when every answer is its own in a space that does not repeat; won
    #: instances asked).
    unexplained: dict[str, tuple[int, int]] = field(default_factory=dict)
    note: str = ""
    worker: int = 0


def _wins(state: Any, calls: Calls, moves: list[str], seed: int) -> tuple[bool, int, str]:
    """Reset ``seed`` and type ``moves`` (the last one again on the next turn while the
    episode goes on); (won, steps, first observation). A win reached before the last move
    (the filler won) is not the string's."""
    first = calls.reset(seed)
    total, steps, last = 0.0, 0, len(moves) - 1
    for turn in range(min(state.turns, max(len(moves), _TURNS))):
        where = f"at turn {turn + 1} (seed {seed}, hint audit)"
        result = apply(calls, ("step", moves[min(turn, last)]), where)
        steps += 1
        if isinstance(result, StepResult):
            total += result.reward
            if state.win(total) and turn < last:
                return False, steps, first
            if result.ended or state.win(total):
                break
    return bool(state.win(total)), steps, first


def filler(state: Any, worker: int) -> str:
    """A first answer that is not the string, drawn by the secret seed: in even workers a
    plausible wrong answer (another instance's answer from ``solution()``, else a
    number), in odd ones a word. A password accepted only after another first answer is
    then typed second."""
    rng = random.Random(derive_seed(state.base_seed, "validate", "audit filler", worker))
    if worker % 2 == 0:
        answers = [str(i.solution[-1]) for i in state.instances
                   if i.solution and isinstance(i.solution[-1], str | int)]
        return rng.choice(answers) if answers else str(rng.randint(1, 10 ** rng.randint(1, 6)))
    return rng.choice(("maybe", "pass", "unsure", "hello", "no idea", "skip"))


def audit_hint(state: Any, calls: Calls, budget: int | None = None, worker: int = 0) -> Audit:
    """Screen every candidate on two fresh seeds, the plainly spelled ones (quoted, numbers,
    code-like and longer words) on up to ``SCREENS[1]`` while half the budget allows (a
    password that wins few instances is seen at all only when a screening play lands on
    one), typed first and, when episodes have two turns, after a filler answer in turn;
    one that wins is played the way it won on ``constant_episodes`` fresh seeds in all,
    and on as many again when it won twice (step budget: the too-easy budget)."""
    cfg = state.cfg
    budget = cfg.too_easy_max_steps if budget is None else budget
    audit = Audit(worker=worker)
    stream = "hint" if worker == 0 else f"hint {worker}"
    found = candidates(state.hint or "")
    plain = sum(how == "plain" for _, how in found)
    screens = screen_seeds(budget, plain, min(state.turns, _TURNS))
    seeds = [state.seed(stream, k) for k in range(screens + 2 * cfg.constant_episodes)]
    first_answer = filler(state, worker)
    for text, how in found:
        modes = [[text], [first_answer, text] if state.turns >= 2 else [text]]
        audit.how[text] = how
        for i in range(screens if how == "plain" else SCREENS[0]):
            if budget < 2 * _TURNS:
                audit.note = "step budget spent"
                return audit
            moves = modes[i % 2]
            won, steps, first = _wins(state, calls, moves, seeds[i])
            budget -= steps
            audit.tally[text] = [int(won), i + 1]
            if won:
                audit.won_seeds[text] = [seeds[i]]
                budget = _judge_plays(state, calls, audit, moves, first, seeds[screens:],
                                      budget)
                break
    if state.info.has_solution:
        _ask_solutions(state, calls, audit, seeds[screens:])
    return audit


#: Fresh seeds each candidate is screened on, and each plainly spelled one at most.
SCREENS = (2, 4)


def screen_seeds(budget: int, count: int, turns: int) -> int:
    """Screening seeds per plain candidate: as many as half the step budget pays for when
    each of ``count`` of them plays ``turns`` steps per seed (the rest judges winners)."""
    low, high = SCREENS
    return max(low, min(high, budget // 2 // max(1, count * turns)))


def _judge_plays(state: Any, calls: Calls, audit: Audit, moves: list[str],
                 first: str, seeds: list[int], budget: int) -> int:
    """Play a string that won its screening (on the instance showing ``first``) the way
    it won, on fresh seeds (see :func:`audit_hint`); the rest of the budget."""
    cfg, n, text = state.cfg, state.cfg.constant_episodes, moves[-1]
    wins, played, firsts = 1, 1, [first]
    audit.moves[text] = moves
    for seed in seeds:
        if played >= 2 * n or (played == n and wins <= 1):
            break
        if budget < _TURNS:
            audit.note = "step budget spent"
            break
        won, steps, first = _wins(state, calls, moves, seed)
        wins, played, budget = wins + won, played + 1, budget - steps
        if won:
            firsts.append(first)
            audit.won_seeds[text].append(seed)
    audit.tally[text] = [wins, played]
    if played > 1 and wins / played <= cfg.hint_min_win_rate:
        audit.faded.append(text)  # stopped winning: a young process's password?
    elif (played >= 2 * n and wins / played <= cfg.max_policy_win_rate
            and not state.info.has_solution):
        budget = _control(state, calls, audit, moves, firsts, played, budget)
    return budget


#: Answers an unhinted player types anyway (the too-easy stage judges them as constants).
_TRIVIAL = frozenset(c.lower() for c in (*CONSTANTS, "0", "1"))


def _shows(observation: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", observation, re.I) is not None


def _control(state: Any, calls: Calls, audit: Audit, moves: list[str], firsts: list[str],
             played: int, budget: int) -> int:
    """A string that wins some instances but not most (judged so without ``solution()``):
    each neighbour, and each of two random strings of its shape drawn by the secret seed,
    is played the same way on as many fresh seeds of its own (the string's seeds would
    leave a small answer space's other answers only the seeds the string lost), unless an
    instance the string won shows it (an option) or an unhinted player types it anyway.
    The control is the weaker group's best: a small answer space holds both groups as
    often as the string, while an environment that also accepts the string's neighbours
    cannot know the random ones. The rest of the budget."""
    text = moves[-1]
    if text.lower() in _TRIVIAL or any(_shows(obs, text) for obs in firsts):
        return budget
    rng = random.Random(derive_seed(state.base_seed, "validate", "hint control", audit.worker))
    groups = [neighbours(text), [same_shape(text, rng) for _ in range(_SHAPED)]]
    best = [0, 0]  # the most wins of a neighbour, of a random string of the shape
    for j, (group, other) in enumerate((g, c) for g, cs in enumerate(groups) for c in cs):
        wins = 0
        for k in range(played):
            if budget < _TURNS:
                audit.note = "step budget spent"
                return budget
            seed = state.seed(f"hint control {audit.worker} {j}", k)
            won, steps, _ = _wins(state, calls, [*moves[:-1], other], seed)
            wins, budget = wins + won, budget - steps
        best[group] = max(best[group], wins)
    audit.control[text] = min(best) if all(groups) else best[0]
    return budget


#: Random strings of a judged string's shape played beside its two neighbours.
_SHAPED = 2
#: Won instances whose ``solution()`` a judged string is compared with.
_ASKED = 4


def _ask_solutions(state: Any, calls: Calls, audit: Audit, seeds: list[int]) -> None:
    """For each string that won more than ``hint_min_win_rate`` (but not most) of its
    fresh seeds: on how many of the instances it won it is not the instance's own answer
    (asked of ``solution()`` in this worker once every play in it is over)."""
    cfg = state.cfg
    space: list[str | None] = []  # every answer _small_space reads, asked once per audit
    for text, (wins, played) in audit.tally.items():
        if (played < 2 * cfg.constant_episodes or text.lower() in _TRIVIAL
                or not cfg.hint_min_win_rate < wins / played <= cfg.max_policy_win_rate):
            continue
        asked = other = 0
        for seed in audit.won_seeds.get(text, [])[:_ASKED]:
            calls.reset(seed)
            answer = _final_answer(calls.solution(seed))
            asked += 1  # no answer for an instance explains no win on it
            other += answer is None or not _same_answer(text, answer)
        if not other:
            if not space:
                space = _answers(state, calls, seeds)
            other = 0 if _small_space(text, space) else asked
        audit.unexplained[text] = (other, asked)


def _final_answer(solution: Any) -> str | None:
    if isinstance(solution, list | tuple) and solution:
        solution = solution[-1]
    if isinstance(solution, bool) or not isinstance(solution, str | int | float):
        return None
    return str(solution)


def _same_answer(text: str, answer: str) -> bool:
    """``text`` is ``answer`` (case, spacing, punctuation and thousands separators aside)
    or a near miss of it (a fuzzy-matching environment accepts those)."""
    a, b = " ".join(tokens(text.lower())), " ".join(tokens(answer.lower()))
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= _NEAR_MISS


_NEAR_MISS = 0.8


def _answers(state: Any, calls: Calls, seeds: list[int]) -> list[str | None]:
    """The answers of the instance seeds and of the audit's judging ``seeds`` (asked of
    ``solution()`` here)."""
    found = [_final_answer(i.solution) for i in state.instances if i.solution]
    for seed in seeds:
        calls.reset(seed)
        found.append(_final_answer(calls.solution(seed)))
    return found


def _small_space(text: str, answers: list[str | None]) -> bool:
    """Whether ``answers`` other than ``text`` come from a small space (they repeat), so a
    string that is the answer of some instances is one an unhinted player may type as
    well; a ``solution()`` that names the hint's string for a few instances and unique
    answers for the rest does not."""
    others = [" ".join(tokens(a.lower())) for a in answers if a and not _same_answer(text, a)]
    return len(others) > len(set(others))


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
    faded: dict[str, tuple[float, list[str]]] = {}
    for worker, delay in enumerate(answer_delays(state)):
        calls = state.fresh_calls(delay)
        try:
            audit = audit_hint(state, calls, worker=worker)
        finally:
            calls.handle.close()
        judge(state, audit, delay)
        details["hint_strings_tried"] = max(details["hint_strings_tried"], len(audit.tally))
        details["against_neighbours"] = details.get("against_neighbours", 0) + len(audit.control)
        details["answer_delays_s"].append(round(delay, 1))
        if audit.note:
            details["note"] = audit.note
        for text in audit.faded:
            faded.setdefault(text, (delay, audit.moves.get(text, [text])))
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
                f"{_typed(audit, text)} wins {wins} of {played} fresh seeds (answers "
                f"{delay:.1f} s after each observation)",
            )
    for text, (other, asked) in audit.unexplained.items():
        if other:
            wins, played = audit.tally[text]
            raise CheckFailed(
                Stage.HINT_LEAK,
                f"the hint spells out an answer that wins instances it is not the answer of: "
                f"typing {_typed(audit, text)} wins {wins} of {played} fresh seeds (more than "
                f"{cfg.hint_min_win_rate:.0%}; answers {delay:.1f} s after each observation), "
                f"and on {other} of the {asked} won instances asked, solution() answers "
                "something else or a rare answer only the hint names",
            )
    for text, best in audit.control.items():
        wins, played = audit.tally[text]
        if 3 * best <= wins:
            raise CheckFailed(
                Stage.HINT_LEAK,
                f"the hint spells out an answer that wins instances no method explains: "
                f"typing {_typed(audit, text)} wins {wins} of {played} fresh seeds (more than "
                f"{cfg.hint_min_win_rate:.0%}; answers {delay:.1f} s after each "
                f"observation), no instance it won shows it, and the same string a letter "
                f"or digit away (or a random string of its shape) wins {best}",
            )
    details: dict[str, Any] = {"hint_strings_tried": len(audit.tally)}
    if audit.note:
        details["note"] = audit.note
    return details


def _typed(audit: Audit, text: str) -> str:
    moves = audit.moves.get(text, [text])
    after = f" after a first answer {moves[0]!r:.20}" if len(moves) > 1 else ""
    return f"{text!r:.60}{after}"


#: Fresh workers a faded string is played in (one seed each; it must win in every one: a
#: fair four-option letter does so 0.4% of the times it gets here), and how many strings.
FRESH_PLAYS = 4
_FADED_MAX = 2


def _fresh_plays(state: Any, faded: dict[str, tuple[float, list[str]]]) -> int:
    """A string that won its first play and then stopped winning is played once in each of
    ``FRESH_PLAYS`` fresh workers: an answer that works only in a young process (a
    training instance plays a few episodes; a validation worker plays many) wins there."""
    started = 0
    for text, (delay, moves) in list(faded.items())[:_FADED_MAX]:
        wins = 0
        for j in range(FRESH_PLAYS):
            calls = state.fresh_calls(delay)
            started += 1
            try:
                wins += _wins(state, calls, moves, state.seed("fresh", j))[0]
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
