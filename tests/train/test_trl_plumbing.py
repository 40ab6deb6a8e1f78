"""Gradient plumbing of the TRL backend on the tiny model: masks, signs, role losses.

The rollout here is a fixed set of sequences with chosen advantages (a test double for the
ticket rollout only); the trainer, its loss and its optimiser are TRL's, unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spade.train import Role, Sample, TicketResult, load_recipe, plan_step

from spade.rewards import GroupStats

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


class FixedDriver:
    """Hands TRL the same samples every step: ``rows`` = (role, completion, mask, adv)."""

    def __init__(self, run_dir: Path, recipe: Any, rows: list[tuple[Role, list[int], list[int],
                                                                    float]]) -> None:
        self.run_dir = run_dir
        self.recipe = recipe
        self.rows = rows
        self.completed: list[dict[str, Any]] = []

    def rollout(self, step: int) -> list[TicketResult]:
        tickets = plan_step(self.recipe, step)
        g = self.recipe.grpo.group_size
        out = []
        for k, t in enumerate(tickets):
            samples = [Sample(t.id, role, j, (5, 6, 7, 8), tuple(ids), tuple(mask), None, adv,
                              adv) for j, (role, ids, mask, adv) in
                       enumerate(self.rows[k * g:(k + 1) * g])]
            out.append(TicketResult(t, samples, GroupStats(1, g, 0)))
        return out

    @staticmethod
    def samples(results: list[TicketResult]) -> list[Sample]:
        return [s for r in results for s in r.samples]

    def complete(self, step: int, train: dict[str, Any], update_s: float) -> None:
        self.completed.append(train)

    def checkpoint(self, updates: int, staging: Path) -> None:  # HF saves at the end
        self.completed[-1]["checkpointed"] = updates


def _trainer(tmp_path: Path, model_dir: Path, rows: list[Any], lr: float = 1e-2,
             micro_batch: int = 4) -> Any:
    from spade.train._models import load_model
    from spade.train.trl import build_trainer

    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 1, "grpo.tickets_per_step": 2, "grpo.group_size": 2,
        "grpo.micro_batch_size": micro_batch,
        "optim.lr": lr, "checkpoint.every": 100})
    model, tok = load_model(model_dir, "cpu", "float32")
    driver = FixedDriver(tmp_path, recipe, rows)
    return build_trainer(recipe, lambda gen: driver, model, tok, tmp_path, "cpu"), driver


def _seq_logprob(model: Any, prompt: list[int], completion: list[int]) -> float:
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1:-1] / 1.0
    lp = torch.log_softmax(logits.float(), dim=-1)
    return float(lp.gather(1, torch.tensor(completion).view(-1, 1)).sum())


ROWS = [
    (Role.DESIGNER, [40, 41, 42, 43], [1, 1, 1, 1], 1.0),
    (Role.DESIGNER, [50, 51, 52], [1, 1, 1], -1.0),
    (Role.AGENT, [60, 61, 62, 63, 64, 65], [1, 1, 0, 0, 1, 1], 1.0),
    (Role.AGENT, [70, 71, 72], [1, 0, 1], -1.0),
]


def test_masked_tokens_get_no_gradient(tmp_path: Path, tiny_model_dir: Path) -> None:
    trainer, _ = _trainer(tmp_path, tiny_model_dir, ROWS)
    batch = [{"prompt": f"ticket-{k // 2}"} for k in range(4)]  # distinct dicts, as TRL's
    trainer.model.train()  # TRL groups by num_generations only in training mode
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps
    inputs = trainer._generate_and_score_completions(batch)
    grads: dict[str, Any] = {}
    original = trainer._get_per_token_logps_and_entropies

    def keep(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if result[0].requires_grad:
            result[0].retain_grad()
            grads["logps"] = result[0]
        return result

    trainer._get_per_token_logps_and_entropies = keep
    try:
        trainer._compute_loss(trainer.model, inputs).backward()
    finally:
        del trainer._get_per_token_logps_and_entropies
    assert inputs["advantages"].tolist() == pytest.approx([r[3] for r in ROWS])
    g = grads["logps"].grad  # (B, C): d loss / d log p(completion token k)
    for b, (_, ids, mask, _) in enumerate(ROWS):
        for k, m in enumerate(mask):
            assert (float(g[b, k]) != 0.0) == bool(m), (b, k, float(g[b, k]))
        assert float(g[b, len(ids):].abs().sum()) == 0.0  # padding


def test_advantage_sign_moves_log_probability_and_both_roles_have_loss(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    trainer, driver = _trainer(tmp_path, tiny_model_dir, ROWS)
    before = [_seq_logprob(trainer.model, [5, 6, 7, 8], ids) for _, ids, _, _ in ROWS]
    trainer.train()
    after = [_seq_logprob(trainer.model, [5, 6, 7, 8], ids) for _, ids, _, _ in ROWS]
    for (_, _, _, adv), b, a in zip(ROWS, before, after, strict=True):
        assert (a - b) * adv > 0, (adv, b, a)
    train = driver.completed[0]
    assert train["checkpointed"] == 1
    assert train["loss_designer"] != 0.0 and train["loss_agent"] != 0.0
    assert train["grad_norm"] > 0
    _, trl_adv, spade_adv = trainer.advantage_log[0]
    assert trl_adv == pytest.approx(spade_adv, abs=1e-6)


def _weights(model: Any) -> list[Any]:
    return [p.detach().clone() for p in model.parameters()]


def _train_once(tmp_path: Path, model_dir: Path, rows: list[Any], skip: bool,
                monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], dict[str, Any], list[bool]]:
    """One step; the weights, the step's metrics and, per loss forward, whether it
    built a graph. ``skip=False`` is TRL's own path for every micro-batch."""
    from spade.train.trl._trainer import SpadeGRPOTrainer

    with monkeypatch.context() as patch:
        if not skip:
            patch.setattr(SpadeGRPOTrainer, "_carries_no_gradient", lambda self, inputs: False)
        trainer, driver = _trainer(tmp_path, model_dir, rows, micro_batch=2)
        graphs: list[bool] = []
        original = trainer._get_per_token_logps_and_entropies

        def record(*args: Any, **kwargs: Any) -> Any:
            graphs.append(torch.is_grad_enabled())
            return original(*args, **kwargs)

        trainer._get_per_token_logps_and_entropies = record
        trainer.train()
    return _weights(trainer.model), driver.completed[0], graphs


@pytest.mark.parametrize("advantages", [(0.0, 0.0, 0.0, 0.0), (1.0, -1.0, 0.0, 0.0)],
                         ids=["all-zero", "mixed"])
def test_zero_advantage_micro_batches_skip_the_backward_and_change_nothing(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch,
        advantages: tuple[float, ...]) -> None:
    rows = [(role, ids, mask, adv) for (role, ids, mask, _), adv in
            zip(ROWS, advantages, strict=True)]
    fast = _train_once(tmp_path / "fast", tiny_model_dir, rows, True, monkeypatch)
    full = _train_once(tmp_path / "full", tiny_model_dir, rows, False, monkeypatch)
    for a, b in zip(fast[0], full[0], strict=True):
        assert torch.equal(a, b)  # bit for bit: the skipped gradient is exactly zero
    for key in ("loss", "grad_norm", "entropy", "loss_designer", "loss_agent"):
        assert fast[1][key] == full[1][key], key
    assert all(full[2])
    # two micro-batches; a zero-advantage one is a forward pass only (no graph, no backward)
    assert fast[2] == [bool(advantages[0] or advantages[1]), bool(advantages[2] or advantages[3])]
