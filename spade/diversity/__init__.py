"""Diversity of generated environments: embedders, the batch diversity score,
near-duplicates by normalised code and by embedding, and a 2-D projection plot.

    embedder = make_embedder("auto")            # MiniLM offline, else lexical (warned)
    report, emb = diversity_report(sources, embedder, hints=hints)
    metrics["diversity"] = report.to_json()     # records embedding_backend
    projection_png(emb, run_dir / "diversity.png", labels=skills)

Keep one embedder object per run: it caches the loaded model.
"""

from __future__ import annotations

from spade.diversity._embed import (
    MINILM_NAME,
    Embedder,
    LexicalEmbedder,
    MiniLMEmbedder,
    make_embedder,
    minilm_available,
    minilm_model_dir,
)
from spade.diversity._metrics import (
    DiversityReport,
    DuplicatePair,
    NearDuplicates,
    code_duplicates,
    diversity_report,
    diversity_score,
    embedding_duplicates,
    embedding_text,
    near_duplicates,
    nearest_code_similarity,
)
from spade.diversity._normalize import code_hash, code_tokens, jaccard, normalize_code, shingles
from spade.diversity._plot import pca_2d, project_2d, projection_png

__all__ = [
    "MINILM_NAME",
    "DiversityReport",
    "DuplicatePair",
    "Embedder",
    "LexicalEmbedder",
    "MiniLMEmbedder",
    "NearDuplicates",
    "code_duplicates",
    "code_hash",
    "code_tokens",
    "diversity_report",
    "diversity_score",
    "embedding_duplicates",
    "embedding_text",
    "jaccard",
    "make_embedder",
    "minilm_available",
    "minilm_model_dir",
    "near_duplicates",
    "nearest_code_similarity",
    "normalize_code",
    "pca_2d",
    "project_2d",
    "projection_png",
    "shingles",
]
