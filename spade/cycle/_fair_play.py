"""Is a design's regret earned? Two run-time checks of its matched plays.

The designer is paid the hinted arm's success minus the unhinted arm's, so the cheapest
way to a high reward is not a task the hint makes learnable but an environment that tells
the arms apart. The validator tries to catch that before play; these checks look at the
plays that the reward is computed from, where no validator trick can hide it:

- **Same instance, same behaviour.** Both arms play the same seeds, so the same seed must
  show the same first observation in both arms, and the same actions on it must get the
  same feedback and rewards until the actions differ. An environment that recognises the
  second play of a seed (a marker left by the first, state kept in its class, a clock)
  fails this.
- **No password.** When three or more different instances were won in the hinted arm and
  every one of those wins ended with the same action, and that action is not shown by the
  instances themselves (as an option letter would be), the hint carries a password, not
  a method.

A design that fails either gets no regret and is reported (outcome ``unfair_play``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spade.episodes import Trajectory

#: Hinted wins on different instances needed before a shared winning action is judged.
MIN_PASSWORD_WINS = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(text))


def unfair_play(hinted: Sequence[Trajectory], unhinted: Sequence[Trajectory]) -> str | None:
    """Why the plays do not earn regret, or None when they do."""
    return _replay_differs(hinted, unhinted) or _password(hinted)


def _replay_differs(hinted: Sequence[Trajectory], unhinted: Sequence[Trajectory]) -> str | None:
    played: dict[int, Trajectory] = {}
    for trajectory in [*hinted, *unhinted]:
        if trajectory.env_fault is not None:
            continue
        first = played.setdefault(trajectory.seed, trajectory)
        if first is trajectory:
            continue
        diff = _difference(first, trajectory)
        if diff:
            return (f"seed {trajectory.seed} played twice behaved differently the second "
                    f"time: {diff}")
    return None


def _difference(a: Trajectory, b: Trajectory) -> str | None:
    if a.reset_observation != b.reset_observation:
        return "reset gave another first observation"
    for x, y in zip(a.turns, b.turns, strict=False):
        if (x.action, x.tool_calls) != (y.action, y.tool_calls):
            return None  # the plays went separate ways; nothing more to compare
        if x.feedback != y.feedback or x.reward != y.reward:
            return f"turn {x.index + 1} ({x.action!r:.40}) got other feedback or reward"
    return None


def _password(hinted: Sequence[Trajectory]) -> str | None:
    wins = [t for t in hinted if t.won and t.turns and t.env_fault is None]
    instances = {t.reset_observation for t in wins}
    if len(instances) < MIN_PASSWORD_WINS:
        return None
    finals = {_words(t.turns[-1].action or "") for t in wins}
    if len(finals) != 1:
        return None
    (final,) = finals
    if not final:
        return None
    shown = sum(_contains(_words(t.reset_observation), final) for t in wins)
    if shown:
        return None
    return (f"the hinted arm won {len(wins)} different instances, every one with the same "
            f"action {' '.join(final)!r:.60}, which no instance shows: the hint carries a "
            "password, not a method")


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))
