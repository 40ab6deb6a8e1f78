"""Grounding corpora: lazy JSONL loading, stable doc ids, seeded checkpointable
sampling, and truncation to a prompt budget.

    corpus = load_corpus("games")              # or a path; UserError names a missing file
    sampler = CorpusSampler(corpus, seed=0)
    # on resume: CorpusSampler.restore(corpus, SamplerState.from_json(saved))
    doc = sampler.sample(1)[0]
    prompt_text = truncate_text(doc.text, 4000)
    saved = sampler.state.to_json()            # goes into the run store
"""

from __future__ import annotations

from spade.corpus._corpus import (
    BUNDLED,
    CORPORA_ENV,
    Corpus,
    Document,
    corpus_path,
    default_corpora_dir,
    load_corpus,
)
from spade.corpus._sampler import CorpusSampler, SamplerState
from spade.corpus._truncate import truncate_text

__all__ = [
    "BUNDLED",
    "CORPORA_ENV",
    "Corpus",
    "CorpusSampler",
    "Document",
    "SamplerState",
    "corpus_path",
    "default_corpora_dir",
    "load_corpus",
    "truncate_text",
]
