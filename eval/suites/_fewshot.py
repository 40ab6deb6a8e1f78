"""Few-shot prompting: solved demonstrations of a suite put before each question.

With ``fewshot = N`` the first N items of each group (a Reasoning Gym dataset; the whole
file for suites without groups), in file order, become demonstrations and are not scored;
``--limit`` then slices what is left. Each demonstration is the item's own prompt (its
sample-0 rendering, system messages left out) answered by the suite's reference answer in
the format the scorer reads (the oracle's reply). A question's prompt is: its system
messages, the demonstrations of its group as earlier user/assistant turns, then its own
messages. Small models that never write the requested answer line learn the format from
the demonstrations; the recorded protocol and every prompt hash change with them, so a
few-shot run never pairs with a zero-shot one.

Only single-turn suites with reference answers take demonstrations: an agentic suite's
episode or a suite whose oracle is unavailable (LiveCodeBench) is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from spade.errors import UserError
from spade.policy._types import Message

if TYPE_CHECKING:
    from spade.eval.suites._base import Item, SingleTurnSuite


def split(items: Sequence[Item], n: int, suite_id: str) -> tuple[dict[str | None, list[Item]],
                                                                 list[Item]]:
    """The first ``n`` items of each group (the shots) and the items left, in file order."""
    shots: dict[str | None, list[Item]] = {}
    rest: list[Item] = []
    for item in items:
        group = shots.setdefault(item.group, [])
        if len(group) < n:
            group.append(item)
        else:
            rest.append(item)
    left = {i.group for i in rest}
    empty = [g for g in shots if g not in left]
    if n and empty:
        where = "" if empty == [None] else f" of group {empty[0]!r}"
        raise UserError(f"{suite_id}: --fewshot {n} leaves no item{where} to score")
    return shots, rest


def demonstrations(suite: SingleTurnSuite, shots: Sequence[Item]) -> list[Message]:
    """User/assistant turns: each shot's prompt (no system message) and its reference reply."""
    from spade.eval.suites._base import OracleUnavailable

    turns: list[Message] = []
    for item in shots:
        try:
            answer = suite.oracle(item, 0)
        except OracleUnavailable as exc:
            raise UserError(f"{suite.id}: --fewshot needs reference answers ({exc})") from None
        turns += [m for m in suite.messages(item, 0) if m["role"] != "system"]
        turns.append({"role": "assistant", "content": answer})
    return turns


def with_demonstrations(messages: Sequence[Message], demos: Sequence[Message]) -> list[Message]:
    """``messages`` with ``demos`` placed after its leading system messages."""
    head = 0
    while head < len(messages) and messages[head]["role"] == "system":
        head += 1
    return [*messages[:head], *demos, *messages[head:]]
