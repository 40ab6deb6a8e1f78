"""A designer group with valid and invalid designs gives the designer role a gradient.

The designs are real replies (family modules as the designer writes them, and two broken
ones), judged by the real validator; the valid ones are played by the tiny model as the
agent through the real episode runner; the CPU recipe's reward (learning potential, -1 for
an invalid design) scores them and GRPO normalises within the group; TRL's trainer then
updates on the designer samples. Fails when the designer role's loss or gradient is zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spade.train import Role, Sample, TicketResult, load_recipe, plan_step

from spade.designer import parse_design, prefill_text, with_prefill
from spade.families import all_instances
from spade.families._pairs import design_reply
from spade.rewards import DesignerReward, GroupStats, grouped_advantages

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytestmark = pytest.mark.bwrap

_BROKEN_SYNTAX = ("\n    max_turns = 1\n\n    def reset(self, seed=None:\n"
                  "        return ('x'\n```\n<hint>Add.</hint>")
_BROKEN_TYPES = ('Broken."""\n\n    max_turns = 1\n\n'
                 '    def reset(self, seed=None, options=None):\n'
                 '        super().reset(seed=seed)\n        return 42, {}\n\n'
                 '    def step(self, action):\n        return "x", 1.0, True, False, {}\n```\n'
                 "<hint>Reply with anything at all.</hint>")


class _Driver:
    """Hands TRL one designer group (the samples under test) plus an agent group."""

    def __init__(self, run_dir: Path, recipe: Any, samples: list[Sample]) -> None:
        self.recipe, self.rows = recipe, samples
        self.completed: list[dict[str, Any]] = []
        self.run_dir = run_dir

    def rollout(self, step: int) -> list[TicketResult]:
        tickets = plan_step(self.recipe, step)
        g = self.recipe.grpo.group_size
        return [TicketResult(t, self.rows[k * g:(k + 1) * g], GroupStats(1, g, 0))
                for k, t in enumerate(tickets)]

    @staticmethod
    def samples(results: list[TicketResult]) -> list[Sample]:
        return [s for r in results for s in r.samples]

    def complete(self, step: int, train: dict[str, Any], update_s: float) -> None:
        self.completed.append(train)

    def checkpoint(self, updates: int, staging: Path) -> None:
        pass


def _designs() -> list[tuple[str, str]]:
    """(skill, reply after the skeleton) of two valid modules and two broken ones."""
    valid = [i for i in all_instances(("sum_numbers",))][:2]
    prefix = prefill_text("skeleton", "games", "math")
    return [("math", design_reply(i)[len(prefix):]) for i in valid] + [
        ("math", _BROKEN_SYNTAX), ("math", _BROKEN_TYPES)]


def _scores(replies: list[str], model: Any, tokenizer: Any) -> list[float]:
    """Validate every parsed reply, play the valid ones with the tiny agent (2 plays per
    arm, matched seeds) and score them with the CPU recipe's designer reward."""
    from spade.cycle._pool import HandlePool
    from spade.episodes import EpisodeConfig, EpisodeJob, run_episodes
    from spade.policy import SamplingParams
    from spade.policy._hf import HFPolicy
    from spade.sandbox import Sandbox
    from spade.validate import validate_batch

    reward = DesignerReward(**load_recipe("cpu_demo").selfplay.reward.model_dump())
    prefix = prefill_text("skeleton", "games", "math")
    parses = [parse_design(prefix + r) for r in replies]
    todo = [k for k, p in enumerate(parses) if p.ok]
    with Sandbox("bwrap") as sandbox:
        verdicts = validate_batch([(parses[k].source or "", parses[k].hint) for k in todo],
                                  sandbox=sandbox)
        valid = {k: parses[k] for k, v in zip(todo, verdicts, strict=True) if v.valid}
        jobs = [EpisodeJob(str(k), s, hint) for k, p in valid.items() for s in (1, 2)
                for hint in (None, p.hint)]
        with HandlePool(sandbox, {str(k): p.source or "" for k, p in valid.items()}) as pool:
            plays = run_episodes(HFPolicy(model, tokenizer), jobs, pool,
                                 SamplingParams(temperature=1.0, max_new_tokens=8, seed=0),
                                 EpisodeConfig(max_turns=1))
    scores = []
    for k in range(len(replies)):
        if k not in valid:
            scores.append(reward.invalid().reward)
            continue
        mine = [(j, t) for j, t in zip(jobs, plays, strict=True) if j.env_id == str(k)]
        scores.append(reward.score([t.total_return for j, t in mine if j.hint is not None],
                                   [t.total_return for j, t in mine if j.hint is None]).reward)
    assert len(valid) == 2, "the two family modules must pass the validator"
    return scores


def test_valid_and_invalid_designs_give_the_designer_a_gradient(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    from spade.train._models import load_model
    from spade.train.trl import build_trainer

    from spade.designer import build_designer_messages
    from spade.policy._template import ChatTemplate

    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 1, "grpo.tickets_per_step": 2, "grpo.group_size": 4,
        "grpo.micro_batch_size": 4,
        "optim.lr": 1e-2, "checkpoint.every": 100})
    model, tok = load_model(tiny_model_dir, "cpu", "float32")
    designs = _designs()
    scores = _scores([r for _, r in designs], model, tok)
    assert scores[2:] == [-1.0, -1.0] and all(s >= 0.0 for s in scores[:2])
    advantages = grouped_advantages({0: scores}).advantages[0]
    assert all(a != 0.0 for a in advantages)

    template = ChatTemplate(tok)
    messages = build_designer_messages("games", "math", None)
    prompt = tuple(template.render(with_prefill(messages, prefill_text("skeleton", "games",
                                                                       "math"))))
    rows = []
    for j, ((_, reply), score, adv) in enumerate(zip(designs, scores, advantages, strict=True)):
        ids = tuple(tok(reply[:200], add_special_tokens=False)["input_ids"])
        rows.append(Sample("designer-0", Role.DESIGNER, j, prompt, ids, (1,) * len(ids), None,
                           score, adv))
    for j, adv in enumerate((1.0, -1.0, 0.5, -0.5)):  # an agent group beside it
        rows.append(Sample("agent-0", Role.AGENT, j, (5, 6, 7), (60 + j, 61), (1, 1), None,
                           adv, adv))
    driver = _Driver(tmp_path, recipe, rows)
    trainer = build_trainer(recipe, lambda gen: driver, model, tok, tmp_path, "cpu")
    trainer.train()
    train = driver.completed[0]
    assert train["loss_designer"] != 0.0
    assert train["grad_norm"] > 0.0
