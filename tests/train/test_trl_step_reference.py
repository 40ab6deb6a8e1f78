"""One TRL-backend update on the tiny model against numbers recorded before the update path
was made cheaper (padding trimmed per micro-batch, log-probs on completion tokens only,
length-sorted sub-batches): the same loss, metrics, gradients and updated weights within
float tolerance.

The batch mixes what makes the cost: a designer group with a long shared prompt and long
completions, agent groups with short prompts, masked environment tokens, a zero-advantage
group, and micro-batches that TRL shuffles. ``reference_step.json`` holds the numbers;
regenerate it only when the update is meant to change (``python -m
tests.train.test_trl_step_reference OUT.json`` prints them from the current code).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from spade.train import Role, Sample, TicketResult, load_recipe, plan_step

from spade.rewards import GroupStats

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

REFERENCE = Path(__file__).with_name("reference_step.json")
METRICS = ("loss", "grad_norm", "entropy", "clip_fraction", "loss_designer", "loss_agent")


def _rows() -> list[tuple[Role, list[int], list[int], list[int], float]]:
    """(role, prompt, completion, env mask, advantage) for 4 tickets x 2 samples."""
    long_prompt = [(7 * k + 3) % 250 for k in range(90)]  # shared by the designer group
    rows: list[tuple[Role, list[int], list[int], list[int], float]] = [
        (Role.DESIGNER, long_prompt, [(11 * k) % 240 + 5 for k in range(40)], [1] * 40, 1.0),
        (Role.DESIGNER, long_prompt, [(13 * k) % 230 + 9 for k in range(23)], [1] * 23, -1.0),
    ]
    for t, adv in ((1, 0.7), (2, 0.0), (3, -0.4)):
        prompt = [30 + t, 31 + t, 32, 33, 34 + t]
        for j, sign in enumerate((1.0, -1.0)):
            n = 6 + 3 * t + j
            comp = [(17 * (k + t) + j) % 200 + 20 for k in range(n)]
            mask = [0 if 3 <= k < 5 else 1 for k in range(n)]  # an environment reply
            rows.append((Role.AGENT, prompt, comp, mask, sign * adv))
    return rows


class _Driver:
    """Hands TRL the rows above as the step's samples (the ticket rollout's test double)."""

    def __init__(self, run_dir: Path, recipe: Any) -> None:
        self.run_dir = run_dir
        self.recipe = recipe
        self.completed: list[dict[str, Any]] = []

    def rollout(self, step: int) -> list[TicketResult]:
        rows, g, out = _rows(), self.recipe.grpo.group_size, []
        for k, t in enumerate(plan_step(self.recipe, step)):
            samples = [Sample(t.id, role, j, tuple(p), tuple(c), tuple(m), None, adv, adv)
                       for j, (role, p, c, m, adv) in enumerate(rows[k * g:(k + 1) * g])]
            out.append(TicketResult(t, samples, GroupStats(1, g, 0)))
        return out

    @staticmethod
    def samples(results: list[TicketResult]) -> list[Sample]:
        return [s for r in results for s in r.samples]

    def complete(self, step: int, train: dict[str, Any], update_s: float) -> None:
        self.completed.append(train)

    def checkpoint(self, updates: int, staging: Path) -> None:
        pass


def _fingerprint(tensors: list[Any]) -> dict[str, Any]:
    """Per-tensor norms and one fixed random projection of the whole vector."""
    flat = torch.cat([t.reshape(-1).double() for t in tensors])
    gen = torch.Generator().manual_seed(1234)
    proj = torch.randn(flat.numel(), generator=gen, dtype=torch.float64)
    return {"norms": [float(t.double().norm()) for t in tensors],
            "projection": float((flat * proj).sum()), "abs_sum": float(flat.abs().sum())}


def step_numbers(tmp_path: Path, model_dir: Path, forward_tokens: int = 4096
                 ) -> dict[str, Any]:
    """One update from the tiny model: the step's metrics, gradients and weight change."""
    from spade.train._models import load_model
    from spade.train.trl import build_trainer
    from transformers import TrainerCallback

    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 1, "grpo.tickets_per_step": 4, "grpo.group_size": 2,
        "grpo.micro_batch_size": 2, "temperature": 0.8,
        "optim.lr": 1e-3, "checkpoint.every": 100, "grpo.forward_tokens": forward_tokens})
    model, tok = load_model(model_dir, "cpu", "float32")
    before = [p.detach().clone() for p in model.parameters()]
    driver = _Driver(tmp_path, recipe)
    trainer = build_trainer(recipe, lambda gen: driver, model, tok, tmp_path, "cpu")
    grads: list[Any] = []

    class Grads(TrainerCallback):
        def on_pre_optimizer_step(self, *args: Any, **kwargs: Any) -> None:
            grads.extend(p.grad.detach().clone() for p in trainer.model.parameters())

    trainer.add_callback(Grads())
    passes: list[int] = []
    part_loss = trainer._part_loss

    def count(*args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return part_loss(*args, **kwargs)

    trainer._part_loss = count
    trainer.train()
    after = [p.detach() for p in trainer.model.parameters()]
    train = driver.completed[0]
    return {"metrics": {k: float(train[k]) for k in METRICS},
            "grad": _fingerprint(grads),
            "delta": _fingerprint([a - b for a, b in zip(after, before, strict=True)]),
            "passes": len(passes)}


def _close(got: Any, want: Any, path: str, rel: float, abs_: float) -> None:
    if isinstance(want, dict):
        for key in want:
            _close(got[key], want[key], f"{path}.{key}", rel, abs_)
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{path}[{k}]", rel, abs_)
    else:
        assert got == pytest.approx(want, rel=rel, abs=abs_), path


@pytest.mark.parametrize("forward_tokens", [4096, 40], ids=["whole", "split"])
def test_an_update_matches_the_recorded_numbers(tmp_path: Path, tiny_model_dir: Path,
                                                forward_tokens: int) -> None:
    """``split``: every micro-batch runs in parts, the designer rows alone and with
    gradient checkpointing."""
    want = json.loads(REFERENCE.read_text(encoding="utf-8"))
    got = step_numbers(tmp_path, tiny_model_dir, forward_tokens)
    _close(got["metrics"], want["metrics"], "metrics", 1e-4, 1e-7)
    _close(got["grad"], want["grad"], "grad", 1e-4, 1e-9)
    _close(got["delta"], want["delta"], "delta", 1e-4, 1e-9)
    passes = got["passes"]  # loss passes: one per micro-batch, or more when split
    assert passes == 4 if forward_tokens > 1000 else passes > 4


if __name__ == "__main__":  # print the reference numbers of the current code
    import tempfile

    from spade.train._models import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        numbers = step_numbers(Path(tmp) / "run", build_tiny_model(Path(tmp) / "tiny"))
    numbers.pop("passes")
    Path(sys.argv[1]).write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
