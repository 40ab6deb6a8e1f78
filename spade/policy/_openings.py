"""Which leading tokens the prompts of one batch share, so the prompt pass encodes each
shared opening once instead of once per row.

Prompts of one batch often open alike: every agent turn starts with the same system
prompt, a suite's items with the same instructions, a Reasoning Gym dataset's items with
the same solved demonstration. Sorted, rows that open alike are neighbours; a greedy pass
groups them while the group keeps at least half of its opening. The plan is used only when
it computes clearly fewer token positions than one plain left-padded pass (prompts are
padded to the longest of their pass, so a plan pays for its widest opening and its widest
remainder).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MIN_SHARED", "Openings", "plan_openings"]

#: Fewest tokens a group's opening must have to be worth a pass of its own.
MIN_SHARED = 16
#: A plan must cost at most this share of the plain pass (two forwards instead of one).
_WORTH = 0.8


@dataclass(frozen=True)
class Openings:
    """Rows grouped by a shared opening: ``groups[g]`` are row indices whose prompts all
    start with the same ``lengths[g]`` tokens, each keeping at least one token of its own."""

    groups: list[list[int]]
    lengths: list[int]

    def group_of(self, rows: int) -> list[int]:
        """Each row's group number."""
        out = [0] * rows
        for g, members in enumerate(self.groups):
            for row in members:
                out[row] = g
        return out

    def cost(self, prompts: Sequence[Sequence[int]]) -> int:
        """Token positions of the two passes (openings, then each row's remainder)."""
        group = self.group_of(len(prompts))
        rest = max(len(p) - self.lengths[group[r]] for r, p in enumerate(prompts))
        return len(self.groups) * max(self.lengths) + len(prompts) * rest


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n, limit = 0, min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def plan_openings(prompts: Sequence[Sequence[int]]) -> Openings | None:
    """The grouping of ``prompts`` (distinct token lists) by shared opening, or None when
    one plain pass costs about as much (one row, no opening of ``MIN_SHARED`` tokens)."""
    if len(prompts) < 2 or min(len(p) for p in prompts) < 2:
        return None
    order = sorted(range(len(prompts)), key=lambda i: list(prompts[i]))
    groups, lengths = [[order[0]]], [len(prompts[order[0]]) - 1]
    for row in order[1:]:
        prompt = prompts[row]
        shared = min(_common(prompts[groups[-1][0]], prompt), lengths[-1], len(prompt) - 1)
        if shared >= MIN_SHARED and 2 * shared >= lengths[-1]:
            groups[-1].append(row)
            lengths[-1] = shared
        else:
            groups.append([row])
            lengths.append(len(prompt) - 1)
    plan = Openings(groups, lengths)
    if len(groups) == len(prompts):
        return None
    plain = len(prompts) * max(len(p) for p in prompts)
    return plan if plan.cost(prompts) <= _WORTH * plain else None
