"""Is a design's regret earned? Run-time checks of its matched plays.

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
- **No string the hint carries that the wins need.** An agent that reasons before it
  types the password ends every win with another reply, so the replies are not compared
  whole: a string the hint spells out (a word, a quoted string, an encoding the hint
  audit reads) that the final replies of three or more won instances (and at least half
  of all wins) contain and none of those instances shows is taken out of each of those
  replies, and the play is replayed in a fresh worker of the design (``Replay``). When
  every replay then loses, the wins came from the string, not from the instance: the
  hint carries a password. A method word the agent merely repeats changes nothing when
  taken out, so a fair design is not touched, however alike its winning replies are.

A design that fails any of them gets no regret and is reported (outcome ``unfair_play``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from spade.episodes import Trajectory
from spade.validate._hint_strings import candidates

#: Hinted wins on different instances needed before a shared winning action is judged.
MIN_PASSWORD_WINS = 3
#: Won instances replayed, and hint strings a report names at most.
REPLAYS = 3
MAX_SUSPECTS = 3
_WORD = re.compile(r"\w+", re.UNICODE)

#: Replays ``trajectory`` (same seed, same earlier actions and tool calls) with its final
#: action replaced by the given text; True when that play wins.
Replay = Callable[[Trajectory, str], bool]


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(text))


def unfair_play(hinted: Sequence[Trajectory], unhinted: Sequence[Trajectory],
                replay: Replay | None = None) -> str | None:
    """Why the plays do not earn regret, or None when they do (``replay``: see the
    module doc; without it only the first two checks run)."""
    return (_replay_differs(hinted, unhinted) or _password(hinted)
            or (_needed_string(hinted, replay) if replay is not None else None))


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


def _won(hinted: Sequence[Trajectory]) -> list[Trajectory]:
    return [t for t in hinted if t.won and t.turns and t.env_fault is None]


def _password(hinted: Sequence[Trajectory]) -> str | None:
    wins = _won(hinted)
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


def _pattern(text: str) -> re.Pattern[str]:
    """``text`` as a whole word or phrase, any case."""
    return re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)", re.IGNORECASE)


def hint_strings(hint: str) -> list[str]:
    """Every string the hint spells out (the audit's ways and each of its words), longest
    first."""
    found = [text for text, _ in candidates(hint)] + list(_WORD.findall(hint))
    return sorted({t.strip() for t in found if t.strip()}, key=lambda t: (-len(t), t))


def suspects(hint: str, wins: Sequence[Trajectory]) -> list[tuple[str, list[Trajectory]]]:
    """Hint strings the final replies of enough won instances contain and none of them
    shows, with those wins (one per instance)."""
    out = []
    for text in hint_strings(hint):
        pattern = _pattern(text)
        carrying: dict[str, Trajectory] = {}
        for t in wins:
            if pattern.search(t.turns[-1].action or ""):
                carrying.setdefault(t.reset_observation, t)
        if len(carrying) < MIN_PASSWORD_WINS or 2 * len(carrying) < len(wins):
            continue
        if any(pattern.search(obs) for obs in carrying):
            continue  # an instance shows it: an option, not a password
        out.append((text, list(carrying.values())))
    return out


def _needed_string(hinted: Sequence[Trajectory], replay: Replay) -> str | None:
    """Replay wins with every suspect string taken out (all at once: a password hidden
    among method words the agent repeats is taken out with them)."""
    wins = _won(hinted)
    hint = next((t.hint for t in hinted if t.hint), None)
    if not hint or len({t.reset_observation for t in wins}) < MIN_PASSWORD_WINS:
        return None
    found = suspects(hint, wins)
    if not found:
        return None
    texts = [text for text, _ in found]
    by_instance: dict[str, Trajectory] = {}
    for _, carrying in sorted(found, key=lambda f: -len(f[1])):
        for t in carrying:
            by_instance.setdefault(t.reset_observation, t)
    tried = list(by_instance.values())[:REPLAYS]
    for t in tried:
        if replay(t, _without(t.turns[-1].action or "", texts)):
            return None
    shown = ", ".join(repr(x)[:40] for x in texts[:MAX_SUSPECTS])
    return (f"the hinted arm won {len(by_instance)} different instances with replies that "
            f"carry {shown} from the hint, which no instance shows, and each of "
            f"{len(tried)} replayed without it lost: the hint carries a password, not a "
            "method")


def _without(action: str, texts: Sequence[str]) -> str:
    for text in texts:
        action = _pattern(text).sub(" ", action)
    return " ".join(action.split())
