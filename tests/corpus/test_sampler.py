"""Seeded sampling, epochs, checkpoint/restore; truncation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade.corpus import Corpus, CorpusSampler, SamplerState, truncate_text
from spade.errors import UserError


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": f"doc {i}."}) + "\n" for i in range(10)))
    return Corpus(path)


def test_epochs_are_permutations(corpus: Corpus) -> None:
    sampler = CorpusSampler(corpus, seed=3)
    first, second = sampler.next_indices(10), sampler.next_indices(10)
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second  # new permutation per epoch
    assert sampler.state == SamplerState(seed=3, epoch=1, position=10, size=10)
    assert CorpusSampler(corpus, seed=3).next_indices(20) == first + second
    assert CorpusSampler(corpus, seed=4).next_indices(10) != first


@pytest.fixture(scope="module")
def corpus13(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    path = tmp_path_factory.mktemp("corpus") / "c13.jsonl"
    path.write_text("".join(json.dumps({"text": f"d{i}"}) + "\n" for i in range(13)))
    return Corpus(path)


def test_restore_continues_exactly(corpus13: Corpus) -> None:
    @settings(deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=13), min_size=1, max_size=6))
    def check(steps: list[int]) -> None:
        _check_restore(corpus13, steps)

    check()


def _check_restore(corpus: Corpus, steps: list[int]) -> None:
    straight = CorpusSampler(corpus, seed=7)
    expected = straight.next_indices(sum(steps) + 5)
    sampler = CorpusSampler(corpus, seed=7)
    got: list[int] = []
    for n in steps:
        got += sampler.next_indices(n)
        saved = json.loads(json.dumps(sampler.state.to_json()))
        sampler = CorpusSampler.restore(corpus, SamplerState.from_json(saved))
    got += sampler.next_indices(5)
    assert got == expected


def test_restore_rejects_changed_corpus(corpus: Corpus) -> None:
    with pytest.raises(UserError, match="changed"):
        CorpusSampler.restore(corpus, SamplerState(seed=1, size=11))
    with pytest.raises(UserError, match="corrupt"):
        SamplerState.from_json({"seed": 1})


def test_sample_returns_documents(corpus: Corpus) -> None:
    docs = CorpusSampler(corpus, seed=0).sample(3)
    assert len({d.id for d in docs}) == 3 and all(d.text.startswith("doc ") for d in docs)


def test_truncate_prefers_sentence_then_word() -> None:
    text = "One two three. Four five six seven. Eight nine ten eleven twelve."
    assert truncate_text(text, 1000) == text
    assert truncate_text(text, 40) == "One two three. Four five six seven."
    assert truncate_text(text, 35) == "One two three. Four five six seven."
    assert truncate_text("aaaa bbbb cccc dddd", 12) == "aaaa bbbb"
    assert truncate_text("x" * 50, 10) == "x" * 10
    para = "Heading\n\nBody text that goes on and on and on"
    assert truncate_text(para, 20) == "Heading\n\nBody text"
    assert truncate_text("Heading here\n\nBody text that goes on", 16) == "Heading here"


@given(st.text(alphabet="ab .\n", max_size=200), st.integers(min_value=0, max_value=120))
def test_truncate_is_a_prefix_within_budget(text: str, n: int) -> None:
    out = truncate_text(text, n)
    assert len(out) <= n and text.startswith(out)
