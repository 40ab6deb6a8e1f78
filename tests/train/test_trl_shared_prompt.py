"""The update runs a designer group's shared prompt once: the same log-probs and the same
gradient as one pass over every row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")


def _pass(model: Any, ids: Any, mask: Any, keep: int) -> tuple[Any, dict[str, Any]]:
    from spade.train.trl._update import completion_logps

    model.zero_grad(set_to_none=True)
    found = completion_logps(model, ids, mask, keep, 1.0, False)
    assert found is not None
    logps = found[0]
    (logps * mask[:, -keep:]).sum().backward()
    return logps.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()
                            if p.grad is not None}


def test_shared_prompt_once_same_logps_and_gradient(
        tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from spade.train._models import load_model
    from spade.train.trl import _update

    model, _ = load_model(tiny_model_dir, "cpu", "float32")
    model.eval()
    torch.manual_seed(0)
    prompt = torch.randint(3, 200, (1, 60))
    replies = torch.randint(3, 200, (3, 12))
    ids = torch.cat([prompt.expand(3, -1), replies], dim=1)
    mask = torch.ones_like(ids)
    mask[1, -4:] = 0  # a shorter reply, right-padded
    assert _update._shared_columns(ids, mask, 12) == 60 - 1
    calls: list[tuple[int, ...]] = []
    hook = model.base_model.register_forward_pre_hook(
        lambda _m, _a, kw: calls.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        shared_logps, shared_grads = _pass(model, ids, mask, 12)
    finally:
        hook.remove()
    assert calls == [(1, 59), (3, 13)]  # the prompt once, then each row's own columns
    monkeypatch.setattr(_update, "_shared_columns", lambda *_: 0)
    whole_logps, whole_grads = _pass(model, ids, mask, 12)
    assert torch.allclose(shared_logps, whole_logps, atol=1e-5)
    assert shared_grads.keys() == whole_grads.keys()
    for name, grad in whole_grads.items():
        assert torch.allclose(shared_grads[name], grad, atol=1e-6, rtol=1e-4), name


def test_rows_that_differ_or_are_padded_run_whole() -> None:
    import torch
    from spade.train.trl._update import _shared_columns

    ids = torch.randint(3, 200, (2, 80))
    assert _shared_columns(ids, torch.ones_like(ids), 10) == 0  # different prompts
    same = torch.cat([ids[:1], ids[:1]])
    padded = torch.ones_like(same)
    padded[1, :5] = 0  # a left-padded row: its columns are not the other row's positions
    assert _shared_columns(same, padded, 10) == 0
    assert _shared_columns(same[:1], torch.ones_like(same[:1]), 10) == 0  # one row
