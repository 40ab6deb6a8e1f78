"""Which benchmark columns a table shows, their display names, and how they group.

A column key is ``<suite id>`` or ``<suite id>/<category>``: suites that report categories
(Reasoning Gym's Math / Algorithmic / Cognition / Logic, BFCL's multi-turn, ...) are shown
per category where the paper reports categories (``expand``); other suites show their
headline score. Groups get their own table, average and deltas.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GAMES = "games"
TOOL_USE = "tool_use"
OTHER = "other"

GROUP_TITLES = {
    GAMES: "Reasoning benchmarks, games setting",
    TOOL_USE: "Tool-use benchmarks",
    OTHER: "Other suites",
}
GROUP_ORDER = (GAMES, TOOL_USE, OTHER)


@dataclass(frozen=True)
class SuiteInfo:
    """Display facts for one suite id."""

    name: str
    group: str
    categories: tuple[str, ...] = ()  # preferred order; unknown categories follow sorted
    expand: bool = False  # show one column per category instead of the suite score
    #: also show the suite score, under this name (tau2's overall pass^1, ACEBench's summary)
    headline: str | None = None
    #: show only the listed categories (the tool-use suites record finer ones too)
    listed_only: bool = False


SUITES: dict[str, SuiteInfo] = {
    "aime24": SuiteInfo("AIME 24", GAMES),
    "aime25": SuiteInfo("AIME 25", GAMES),
    "aime26": SuiteInfo("AIME 26", GAMES),
    "gpqa_diamond": SuiteInfo("GPQA-D", GAMES),
    "livecodebench": SuiteInfo("LCB", GAMES),
    "reasoning_gym": SuiteInfo("RG", GAMES, ("Math", "Algorithmic", "Cognition", "Logic"), True),
    "bfcl_v4": SuiteInfo(
        "BFCL v4",
        TOOL_USE,
        ("overall", "non_live", "live", "multi_turn", "irrelevance", "relevance"),
        True,
        listed_only=True,
    ),
    "tau2": SuiteInfo(
        "tau2-bench", TOOL_USE, ("retail", "airline", "telecom"), True, "pass^1", True
    ),
    "acebench": SuiteInfo(
        "ACEBench", TOOL_USE, ("normal", "special", "agent"), True, "summary", True
    ),
}

#: The paper's eight held-out games-setting benchmarks (AIME 25/26, GPQA-Diamond,
#: LiveCodeBench and the four Reasoning Gym categories): the columns a reported
#: "suite average" is taken over. Averages over other column sets (AIME 24 included)
#: are flagged.
CANONICAL = {
    GAMES: (
        "aime25",
        "aime26",
        "gpqa_diamond",
        "livecodebench",
        "reasoning_gym/Math",
        "reasoning_gym/Algorithmic",
        "reasoning_gym/Cognition",
        "reasoning_gym/Logic",
    ),
}

#: Columns a row's Avg is taken over, where not all of the group's columns: in the tool-use
#: table the three numbers the paper reports (the other columns break these down).
AVERAGED = {TOOL_USE: ("bfcl_v4/multi_turn", "tau2", "acebench/agent")}

#: Categories shown under a different name than their results.json key.
_CATEGORY_NAMES = {"non_live": "non-live", "multi_turn": "multi-turn", "overall": "Overall Acc"}


def split_key(key: str) -> tuple[str, str | None]:
    suite, _, category = key.partition("/")
    return suite, category or None


def expands(suite: str) -> bool:
    info = SUITES.get(suite)
    return bool(info and info.expand)


def group_of(key: str) -> str:
    info = SUITES.get(split_key(key)[0])
    return info.group if info else OTHER


def label(key: str) -> str:
    """Display name: ``AIME 24``, ``RG Math``, ``BFCL v4 multi-turn``, ``tau2-bench pass^1``."""
    suite, category = split_key(key)
    info = SUITES.get(suite)
    name = info.name if info else suite
    if category is None:
        return f"{name} {info.headline}" if info and info.headline else name
    return f"{name} {_CATEGORY_NAMES.get(category, category)}"


def _sort_key(key: str) -> tuple[int, str, int, str]:
    suite, category = split_key(key)
    ids = list(SUITES)
    suite_rank = ids.index(suite) if suite in ids else len(ids)
    cats = SUITES[suite].categories if suite in SUITES else ()
    cat_rank = -1 if category is None else (cats.index(category) if category in cats else len(cats))
    return (suite_rank, suite, cat_rank, category or "")


def averaged(group: str, columns: Sequence[str]) -> tuple[str, ...]:
    """The columns a row's Avg is taken over in ``group``'s table."""
    return AVERAGED.get(group, tuple(columns))


def ordered(keys: Iterable[str]) -> list[str]:
    """Column keys in paper order: known suites first, categories in their usual order."""
    return sorted(set(keys), key=_sort_key)
