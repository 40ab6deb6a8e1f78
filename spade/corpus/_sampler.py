"""Seeded, checkpointable sampling of corpus documents.

The sampler walks a fresh permutation of the corpus per epoch, so documents repeat only
after all others were used. Its whole state is ``(seed, epoch, position, size)``: small,
JSON-serialisable, and enough to continue exactly where a killed run stopped. No global RNG
is touched; each epoch's permutation comes from ``random.Random`` seeded with a string
derived from the seed and the epoch (string seeding is stable across processes).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from spade.corpus._corpus import Corpus, Document
from spade.errors import UserError


@dataclass(frozen=True)
class SamplerState:
    """Where a :class:`CorpusSampler` stands; ``to_json``/``from_json`` for the run store."""

    seed: int
    epoch: int = 0
    position: int = 0
    size: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SamplerState:
        try:
            return cls(**{k: int(data[k]) for k in ("seed", "epoch", "position", "size")})
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"corrupt corpus sampler state: {data!r}") from exc


class CorpusSampler:
    """Draws documents from a corpus in a seeded order without replacement per epoch."""

    def __init__(self, corpus: Corpus, seed: int) -> None:
        self.corpus = corpus
        self._seed = int(seed)
        self._epoch = 0
        self._position = 0
        self._order: list[int] = self._permutation(0)

    @classmethod
    def restore(cls, corpus: Corpus, state: SamplerState) -> CorpusSampler:
        """Continue from a saved state (``UserError`` if the corpus size changed)."""
        if state.size != len(corpus):
            raise UserError(
                f"corpus {corpus.path} has {len(corpus)} documents but the saved sampler "
                f"state expects {state.size}: the corpus changed since the run started"
            )
        if not 0 <= state.position <= state.size or state.epoch < 0:
            raise UserError(f"corrupt corpus sampler state: {state}")
        sampler = cls(corpus, state.seed)
        sampler._epoch = state.epoch
        sampler._position = state.position
        sampler._order = sampler._permutation(state.epoch)
        return sampler

    def _permutation(self, epoch: int) -> list[int]:
        order = list(range(len(self.corpus)))
        random.Random(f"spade-corpus:{self._seed}:{epoch}").shuffle(order)
        return order

    @property
    def state(self) -> SamplerState:
        return SamplerState(self._seed, self._epoch, self._position, len(self.corpus))

    def next_indices(self, n: int) -> list[int]:
        """The next ``n`` document indices, crossing into new epochs as needed."""
        if n < 0:
            raise ValueError(f"cannot sample {n} documents")
        out: list[int] = []
        while len(out) < n:
            if self._position >= len(self._order):
                self._epoch += 1
                self._position = 0
                self._order = self._permutation(self._epoch)
            take = min(n - len(out), len(self._order) - self._position)
            out.extend(self._order[self._position : self._position + take])
            self._position += take
        return out

    def sample(self, n: int) -> list[Document]:
        """The next ``n`` documents."""
        return [self.corpus[i] for i in self.next_indices(n)]
