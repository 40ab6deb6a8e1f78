"""HF batches: at most ``max_batch_size`` rows and ``max_batch_tokens`` of (longest prompt +
token budget) x rows, so a few long prompts do not pad a wide batch."""

from __future__ import annotations

from types import SimpleNamespace

from spade.policy._hf import HFPolicy


def _chunks(size: int, tokens: int, lengths: list[int], max_new: int) -> list[list[int]]:
    prompts = [[0] * n for n in lengths]
    members = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    limits = SimpleNamespace(max_batch_size=size, max_batch_tokens=tokens)
    return HFPolicy._chunks(limits, members, prompts, max_new)  # type: ignore[arg-type]


def test_short_prompts_fill_the_batch_size() -> None:
    assert _chunks(4, 10_000, [10] * 10, 10) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_long_prompts_get_small_batches() -> None:
    # widths: 1000+24 for the two long ones (one per batch of budget 2000), then 100+24
    chunks = _chunks(8, 2000, [100, 1000, 100, 1000, 100], 24)
    assert chunks == [[1], [3], [0, 2, 4]]
    assert sorted(i for c in chunks for i in c) == [0, 1, 2, 3, 4]


def test_a_prompt_wider_than_the_budget_still_runs_alone() -> None:
    assert _chunks(8, 10, [500, 5], 5) == [[0], [1]]
