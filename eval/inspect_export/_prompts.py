"""Rebuild the prompts of a single-turn run from its recorded arguments.

Sample records keep only a hash of the prompt (prompts are large and fully determined by
the data, the template and the seed). To show the conversation in inspect's viewer the
suite is rebuilt exactly as the runner built it (same protocol overrides, suite options and
seed) and each rebuilt prompt is checked against the recorded hash; a prompt that cannot
be rebuilt or does not match is reported as such, never shown as if it were the real one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.eval.suites._base import Item

from spade.errors import UserError
from spade.policy._types import Message


@dataclass
class PromptSource:
    """Items of one suite and a way to rebuild each (item, sample) prompt."""

    suite: str
    items: Mapping[str, Item] = field(default_factory=dict)
    problem: str | None = None  # why prompts are unavailable, when they are
    _suite: Any = None

    def messages(self, key: str, sample: int) -> list[Message] | None:
        if self._suite is None or key not in self.items:
            return None
        return list(self._suite.prompt(self.items[key], sample))

    def close(self) -> None:
        if self._suite is not None:
            self._suite.close()


def prompt_source(suite_id: str, args: Mapping[str, Any]) -> PromptSource:
    """Rebuild ``suite_id`` from ``run.json`` arguments; never raises for missing pieces."""
    from spade.eval import _protocol
    from spade.eval.data import DataDir
    from spade.eval.suites import SUITES

    try:
        cls = SUITES.get(suite_id)
    except UserError as exc:
        return PromptSource(suite_id, problem=str(exc))
    if getattr(cls, "kind", "single_turn") != "single_turn":
        return PromptSource(suite_id, problem="agentic suite: the transcript is in the record")
    data_dir = args.get("data_dir")
    if not data_dir or not Path(data_dir).is_dir():
        return PromptSource(suite_id, problem=f"data directory {data_dir!r} is not available")
    try:
        protocol = _protocol.build(
            suite_id, dict(args.get("overrides") or {}), dict(args.get("extra") or {})
        )
        suite = cls(protocol, int(args.get("seed") or 0))
        loaded = suite.load(DataDir(Path(data_dir)))
        items: Sequence[Item] = suite.select(suite.take_fewshot(loaded.items))
    except (UserError, OSError, ValueError) as exc:
        return PromptSource(suite_id, problem=f"cannot rebuild the suite ({exc})")
    return PromptSource(suite_id, {i.key: i for i in items}, _suite=suite)
