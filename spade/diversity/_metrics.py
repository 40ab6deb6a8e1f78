"""Batch diversity and near-duplicate metrics.

- Diversity score: the mean pairwise cosine DISTANCE ``1 - cos(e_i, e_j)`` over all
  unordered pairs of a batch's embeddings (0 = all identical; MiniLM puts unrelated texts
  around 0.6–0.9). The paper reports 0.68 for full SPADE. ``None`` for fewer than 2 items.
- Near duplicates: a pair is a code near-duplicate when the token-3-shingle Jaccard of
  their anonymised normalised code (:func:`normalize_code`) reaches ``code_threshold``
  (identical normalised code scores 1.0), and an embedding near-duplicate when their
  cosine similarity reaches ``cosine_threshold``. The near-duplicate RATE counts items
  that duplicate an EARLIER item of the batch, so a batch of one task written 5 times has
  rate 4/5 and the first copy counts as original.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from spade.diversity._embed import Embedder
from spade.diversity._normalize import code_tokens, jaccard, normalize_code, shingles


@dataclass(frozen=True)
class DuplicatePair:
    """Item ``j`` (later) duplicates item ``i`` (earlier) by ``method`` with ``score``."""

    i: int
    j: int
    method: str  # "code" | "embedding"
    score: float


@dataclass(frozen=True)
class NearDuplicates:
    """Pairs found and per-method rates over a batch of ``n`` items."""

    n: int
    pairs: list[DuplicatePair] = field(default_factory=list)

    def rate(self, method: str | None = None) -> float:
        """Share of items duplicating an earlier one (by ``method``, or by either)."""
        if self.n == 0:
            return 0.0
        later = {p.j for p in self.pairs if method is None or p.method == method}
        return len(later) / self.n


def diversity_score(embeddings: np.ndarray) -> float | None:
    """Mean pairwise cosine distance of unit-norm rows; ``None`` when fewer than 2."""
    n = len(embeddings)
    if n < 2:
        return None
    sims = np.asarray(embeddings, dtype=np.float64) @ np.asarray(embeddings, dtype=np.float64).T
    upper = sims[np.triu_indices(n, k=1)]
    return float(np.mean(1.0 - np.clip(upper, -1.0, 1.0)))


def code_duplicates(sources: Sequence[str], threshold: float = 0.8) -> list[DuplicatePair]:
    """Pairs whose normalised-code shingle Jaccard is at least ``threshold``."""
    normalized = [normalize_code(s) for s in sources]
    sets = [shingles(code_tokens(normalize_code(s, anonymous=True))) for s in sources]
    pairs = []
    for j in range(len(sources)):
        for i in range(j):
            score = 1.0 if normalized[i] == normalized[j] else jaccard(sets[i], sets[j])
            if score >= threshold:
                pairs.append(DuplicatePair(i, j, "code", score))
    return pairs


def nearest_code_similarity(sources: Sequence[str], references: Sequence[str]) -> list[float]:
    """Each source's highest code similarity to any reference, on the same scale as
    :func:`code_duplicates` (1.0 for equal normalised code, else shingle Jaccard of the
    anonymised code); 0.0 without references. A design at or above the code threshold is a
    near-copy of that reference (e.g. of the data a designer was warm-started on)."""
    refs = [(normalize_code(r), shingles(code_tokens(normalize_code(r, anonymous=True))))
            for r in references]
    out = []
    for source in sources:
        mine = normalize_code(source)
        tokens = shingles(code_tokens(normalize_code(source, anonymous=True)))
        out.append(max((1.0 if mine == norm else jaccard(tokens, ref) for norm, ref in refs),
                       default=0.0))
    return out


def embedding_duplicates(embeddings: np.ndarray, threshold: float = 0.95) -> list[DuplicatePair]:
    """Pairs whose cosine similarity is at least ``threshold``."""
    sims = np.asarray(embeddings, dtype=np.float64) @ np.asarray(embeddings, dtype=np.float64).T
    return [
        DuplicatePair(i, j, "embedding", float(sims[i, j]))
        for j in range(len(embeddings))
        for i in range(j)
        if sims[i, j] >= threshold
    ]


def near_duplicates(
    sources: Sequence[str],
    embeddings: np.ndarray | None = None,
    *,
    code_threshold: float = 0.8,
    cosine_threshold: float = 0.95,
) -> NearDuplicates:
    """Code and (when embeddings are given) embedding near-duplicates of a batch."""
    pairs = code_duplicates(sources, code_threshold)
    if embeddings is not None:
        if len(embeddings) != len(sources):
            raise ValueError(f"{len(embeddings)} embeddings for {len(sources)} sources")
        pairs += embedding_duplicates(embeddings, cosine_threshold)
    return NearDuplicates(len(sources), pairs)


@dataclass(frozen=True)
class DiversityReport:
    """What a cycle records about a batch's diversity (JSON-able via :meth:`to_json`)."""

    n: int
    embedding_backend: str
    embedding_model: str
    diversity_score: float | None
    near_duplicate_rate: float
    near_duplicate_rate_code: float
    near_duplicate_rate_embedding: float
    code_threshold: float
    cosine_threshold: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def embedding_text(source: str, hint: str | None = None) -> str:
    """What to embed for an environment: its code without import lines, then the hint.

    Import boilerplate is shared by all environments and would eat the embedder's
    256-token window without telling tasks apart.
    """
    body = "\n".join(
        line for line in source.splitlines()
        if line.strip() and not line.lstrip().startswith(("import ", "from "))
    )
    return f"{body}\n\nHint: {hint}" if hint else body


def diversity_report(
    sources: Sequence[str],
    embedder: Embedder,
    *,
    hints: Sequence[str] | None = None,
    code_threshold: float = 0.8,
    cosine_threshold: float = 0.95,
) -> tuple[DiversityReport, np.ndarray]:
    """Embed a batch of environments and measure it; returns the report and embeddings."""
    if hints is not None and len(hints) != len(sources):
        raise ValueError(f"{len(hints)} hints for {len(sources)} sources")
    texts = [embedding_text(s, hints[k] if hints else None) for k, s in enumerate(sources)]
    emb = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    dups = near_duplicates(
        sources, emb, code_threshold=code_threshold, cosine_threshold=cosine_threshold
    )
    report = DiversityReport(
        n=len(sources),
        embedding_backend=embedder.backend,
        embedding_model=embedder.name,
        diversity_score=diversity_score(emb),
        near_duplicate_rate=dups.rate(),
        near_duplicate_rate_code=dups.rate("code"),
        near_duplicate_rate_embedding=dups.rate("embedding"),
        code_threshold=code_threshold,
        cosine_threshold=cosine_threshold,
    )
    return report, emb
