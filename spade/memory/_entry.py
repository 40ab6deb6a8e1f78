"""One memory record: a validated environment with its regret annotation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from spade.errors import UserError


class Standing(StrEnum):
    """Where an environment sits relative to the agent, from its solve rates."""

    FRONTIER = "frontier"  # learnable: solved sometimes without the hint, and the hint helps
    TOO_EASY = "too_easy"  # the agent already solves it without help
    TOO_HARD = "too_hard"  # not solved even with the hint
    OTHER = "other"  # e.g. no regret although partly solved


@dataclass(frozen=True)
class MemoryEntry:
    """A validated environment as the memory keeps it.

    ``summary`` is a real description (see :func:`spade.memory.summarize_env`); ``embedding``
    is optional and stored as a tuple so entries stay immutable and comparable.
    """

    env_id: str
    source: str
    hint: str
    skill: str
    doc_id: str | None
    solve_rate_hinted: float
    solve_rate_unhinted: float
    regret: float
    cycle: int
    summary: str
    embedding: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("solve_rate_hinted", "solve_rate_unhinted"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
        if not (math.isfinite(self.regret) and self.regret >= 0.0):
            raise ValueError(f"regret must be finite and >= 0, got {self.regret!r}")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["embedding"] = list(self.embedding) if self.embedding is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryEntry:
        try:
            fields = dict(data)
            emb = fields.get("embedding")
            fields["embedding"] = tuple(float(x) for x in emb) if emb is not None else None
            return cls(**fields)
        except (TypeError, ValueError) as exc:
            raise UserError(f"corrupt memory entry {data.get('env_id')!r}: {exc}") from None
