"""The bounded, regret-annotated memory of validated environments.

Classification of an entry (first match wins), from its solve rates ``p_h`` (hinted) and
``p_u`` (unhinted):

- ``too_easy``: ``p_u >= too_easy``;
- ``too_hard``: ``p_h <= too_hard`` and ``p_u <= too_hard`` (not solved even with the hint);
- ``frontier``: ``band_low <= p_u <= band_high`` (closed, like the designer reward, which
  pays regret at any unhinted solve rate: an environment solved always with the hint and
  never without it, regret 1.0, is the best positive there is) and its worth is above
  ``min_regret``. The worth is the regret, or with ``rank_by: learning_potential`` the
  learning potential ``4 p_u (1 - p_u)`` (for a run whose designer is paid that: where
  hints do not help, no entry earns regret and none would ever be shown as a positive);
- ``other``: the rest (e.g. partly solved, but the hint does not help).

Sampling for a designer prompt (:meth:`Memory.sample`), deterministic given the memory and
the ``random.Random`` passed in:

- positives: the ``k`` frontier entries with the highest worth; ties are broken by a
  random key drawn from the generator, so equal entries rotate between prompts;
- negatives: ``ceil(k/2)`` too-easy and ``k - ceil(k/2)`` too-hard entries drawn uniformly
  at random, each side topped up from the other when it has too few.

Eviction when more than ``capacity`` entries are held: non-frontier entries may fill at most
``negative_quota`` of the capacity; beyond it (or when no frontier entry is left) the OLDEST
non-frontier entry goes (lowest cycle, then earliest insertion). Otherwise the frontier
entry with the LOWEST worth goes (ties: oldest). So the memory keeps the most informative
positives while still holding recent negatives to show the designer.

``to_dict``/``from_dict`` give a plain-JSON form for the run store; insertion order is kept.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from spade.errors import UserError
from spade.memory._entry import MemoryEntry, Standing

_FORMAT_VERSION = 1


class MemoryConfig(BaseModel):
    """Bounds and thresholds of the memory (part of the run config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capacity: int = Field(default=200, ge=1)
    band_low: float = Field(default=0.0, ge=0.0, le=1.0)
    band_high: float = Field(default=1.0, ge=0.0, le=1.0)
    min_regret: float = Field(default=0.0, ge=0.0)
    too_easy: float = Field(default=0.9, ge=0.0, le=1.0)
    too_hard: float = Field(default=0.05, ge=0.0, le=1.0)
    negative_quota: float = Field(default=0.25, ge=0.0, le=1.0)
    #: What makes a frontier entry worth showing: its regret, or its learning potential.
    rank_by: Literal["regret", "learning_potential"] = "regret"

    @model_validator(mode="after")
    def _ordered(self) -> MemoryConfig:
        if self.band_low >= self.band_high:
            raise ValueError(f"empty frontier band ({self.band_low}, {self.band_high})")
        return self


@dataclass(frozen=True)
class Negative:
    """A negative example and why it is one."""

    entry: MemoryEntry
    standing: Standing


@dataclass(frozen=True)
class MemorySample:
    """What the designer prompt shows: frontier positives and too-easy/too-hard negatives."""

    positives: list[MemoryEntry]
    negatives: list[Negative]


class Memory:
    """Bounded store of :class:`MemoryEntry` keyed by env id, in insertion order."""

    def __init__(self, config: MemoryConfig | None = None) -> None:
        self.config = config or MemoryConfig()
        self._entries: dict[str, MemoryEntry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, env_id: object) -> bool:
        return env_id in self._entries

    @property
    def entries(self) -> list[MemoryEntry]:
        """All entries, oldest insertion first."""
        return list(self._entries.values())

    def standing(self, entry: MemoryEntry) -> Standing:
        """Classify an entry (see the module docstring)."""
        c = self.config
        p_h, p_u = entry.solve_rate_hinted, entry.solve_rate_unhinted
        if p_u >= c.too_easy:
            return Standing.TOO_EASY
        if p_h <= c.too_hard and p_u <= c.too_hard:
            return Standing.TOO_HARD
        if c.band_low <= p_u <= c.band_high and self.worth(entry) > c.min_regret:
            return Standing.FRONTIER
        return Standing.OTHER

    def worth(self, entry: MemoryEntry) -> float:
        """How much a frontier entry teaches: regret, or learning potential 4p(1-p)."""
        if self.config.rank_by == "learning_potential":
            p = entry.solve_rate_unhinted
            return 4.0 * p * (1.0 - p)
        return entry.regret

    def add(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """Insert (or replace, moving to newest) an entry; returns the entries evicted."""
        self._entries.pop(entry.env_id, None)
        self._entries[entry.env_id] = entry
        evicted = []
        while len(self._entries) > self.config.capacity:
            victim = self._victim()
            evicted.append(self._entries.pop(victim.env_id))
        return evicted

    def _victim(self) -> MemoryEntry:
        order = {env_id: i for i, env_id in enumerate(self._entries)}
        frontier = [e for e in self._entries.values() if self.standing(e) is Standing.FRONTIER]
        rest = [e for e in self._entries.values() if self.standing(e) is not Standing.FRONTIER]
        quota = math.floor(self.config.negative_quota * self.config.capacity)
        if rest and (len(rest) > quota or not frontier):
            return min(rest, key=lambda e: (e.cycle, order[e.env_id]))
        return min(frontier, key=lambda e: (self.worth(e), e.cycle, order[e.env_id]))

    def sample(self, k: int, rng: random.Random, *, k_negative: int | None = None) -> MemorySample:
        """``k`` positives and ``k_negative`` (default ``k``) negatives for one prompt."""
        if k < 0 or (k_negative is not None and k_negative < 0):
            raise ValueError("sample sizes must be >= 0")
        k_neg = k if k_negative is None else k_negative
        by_standing: dict[Standing, list[MemoryEntry]] = {s: [] for s in Standing}
        for entry in self._entries.values():
            by_standing[self.standing(entry)].append(entry)
        ranked = [(-self.worth(e), rng.random(), e) for e in by_standing[Standing.FRONTIER]]
        ranked.sort(key=lambda t: (t[0], t[1]))
        positives = [e for _, _, e in ranked[:k]]
        easy, hard = by_standing[Standing.TOO_EASY], by_standing[Standing.TOO_HARD]
        n_easy = min(len(easy), math.ceil(k_neg / 2))
        n_hard = min(len(hard), k_neg - n_easy)
        n_easy = min(len(easy), k_neg - n_hard)
        negatives = [Negative(e, Standing.TOO_EASY) for e in rng.sample(easy, n_easy)]
        negatives += [Negative(e, Standing.TOO_HARD) for e in rng.sample(hard, n_hard)]
        return MemorySample(positives, negatives)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able state (config and entries in insertion order)."""
        return {
            "version": _FORMAT_VERSION,
            "config": self.config.model_dump(mode="json"),
            "entries": [e.to_json() for e in self._entries.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Memory:
        """Rebuild a memory saved by :meth:`to_dict` (``UserError`` if malformed)."""
        if not isinstance(data, dict) or data.get("version") != _FORMAT_VERSION:
            raise UserError("unsupported or corrupt memory state (expected version 1)")
        try:
            memory = cls(MemoryConfig(**data.get("config", {})))
        except ValidationError as exc:
            raise UserError(f"corrupt memory config: {exc.errors()[0]['msg']}") from None
        for raw in data.get("entries", []):
            entry = MemoryEntry.from_json(raw)
            memory._entries[entry.env_id] = entry
        if len(memory) > memory.config.capacity:
            raise UserError("corrupt memory state: more entries than its capacity")
        return memory
