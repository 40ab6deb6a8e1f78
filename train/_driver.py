"""The one training loop every backend drives: plan, roll out, commit, checkpoint, report.

A backend owns the model and the optimiser; it calls, for every optimiser step ``s``:

    results = driver.rollout(s)              # tickets of step s -> samples (and state)
    ... its own GRPO update on ``driver.samples(results)`` ...
    driver.complete(s, train_metrics, update_s)   # commit to the run store, metrics, TB
    driver.checkpoint(s + 1, staging_dir)    # when due: store snapshot + atomic publish

so planning, the run store, metrics, TensorBoard, best/keep_last and progress are shared.
Steps are numbered from 0; a checkpoint ``step-N`` holds the weights after N updates
(steps 0..N-1) and the run store as of that moment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade.diversity import Embedder
from spade.sandbox import Sandbox
from train import _checkpoint as ckpt
from train._metrics import flatten, step_metrics
from train._pool import EnvPool
from train._rollout import Generator, Rollout, Sample, TicketResult, finish_step
from train._state import SNAPSHOT, TrainStore
from train._tickets import Role, plan_step
from train.baselines import BaselineRollout
from train.designers import frozen_designer, hint_writer
from train.recipe import TrainRecipe

__all__ = ["StepDriver", "rollout_for"]

Reporter = Callable[[int, dict[str, Any]], None]


def rollout_for(recipe: TrainRecipe, generator: Generator, sandbox: Sandbox,
                 embedder: Embedder, say: Callable[[str], None] | None) -> Rollout:
    """The recipe's rollout: agent-only over fixed problems for a baseline, else SPADE's
    (with the frozen designer or external hint writer an ablation names)."""
    if recipe.fixed_env is not None:
        return BaselineRollout(recipe, generator, sandbox, embedder, progress=say)
    return Rollout(recipe.selfplay, generator, sandbox, embedder, progress=say,
                   frozen_designer=frozen_designer(recipe), hint_writer=hint_writer(recipe))


class StepDriver:
    """Shared loop state of one run (see the module docstring)."""

    def __init__(self, recipe: TrainRecipe, store: TrainStore, generator: Generator,
                 sandbox: Sandbox, embedder: Embedder, *, initial_pool: EnvPool | None = None,
                 report: Reporter | None = None, tensorboard: Any = None,
                 manifest: dict[str, Any] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.recipe = recipe
        self.store = store
        self.state, self.next_step = store.load(initial_pool)
        self.first_pool = self.state.pool
        self.say = say
        self.rollout_core = rollout_for(recipe, generator, sandbox, embedder, say)
        if isinstance(self.rollout_core, BaselineRollout) and self.next_step > 0:
            self.rollout_core.restore(store.store.metrics_for(self.next_step - 1))
        self.report = report
        self.tensorboard = tensorboard
        self.manifest = dict(manifest or {})
        self._pending: dict[int, tuple[list[TicketResult], dict[str, Any]]] = {}

    @property
    def run_dir(self) -> Path:
        return self.store.run_dir

    def rollout(self, step: int) -> list[TicketResult]:
        """Execute step ``step``'s tickets; the pool advances at the end of the step."""
        began = time.perf_counter()
        tickets = plan_step(self.recipe, step)
        if self.say is not None:
            plays = sum(t.group_size for t in tickets if t.role is Role.AGENT)
            designs = any(t.role is Role.DESIGNER for t in tickets)
            self.say(f"playing: {plays} agent episodes" + (", then designing" if designs else ""))
        results = self.rollout_core.execute(self.state, tickets)
        changed = finish_step(self.state, results)
        metrics = step_metrics(step, self.state.pool, changed, results,
                               time.perf_counter() - began)
        metrics["method"] = self.recipe.method.model_dump()
        if isinstance(self.rollout_core, BaselineRollout):
            metrics["fixed_env"] = self.rollout_core.fixed_metrics(step)
        self._pending[step] = (results, metrics)
        if self.say is not None:
            self.say(f"updating: GRPO on {len(self.samples(results))} samples")
        return results

    @staticmethod
    def samples(results: list[TicketResult]) -> list[Sample]:
        """All samples of a step, ticket by ticket (each ticket's samples are one group)."""
        return [s for r in results for s in r.samples]

    def complete(self, step: int, train: dict[str, Any], update_s: float) -> dict[str, Any]:
        """Commit step ``step`` (its rollout and the update's numbers) atomically."""
        results, metrics = self._pending.pop(step)
        metrics["train"] = train
        metrics["timing_s"]["update_s"] = round(update_s, 6)
        metrics["timing_s"]["step_s"] = round(metrics["timing_s"]["rollout_s"] + update_s, 6)
        self.store.commit(step, self.state, results, metrics, self.first_pool)
        self.store.write_metrics()
        if self.tensorboard is not None:
            for name, value in flatten(metrics):
                self.tensorboard.add_scalar(name, value, step)
            self.tensorboard.flush()
        if self.report is not None:
            self.report(step, metrics)
        return metrics

    def checkpoint(self, updates: int, staging: Path) -> Path:
        """Publish ``staging`` (a complete model + trainer state) as ``step-<updates>``."""
        self.store.snapshot(staging / SNAPSHOT)
        target = ckpt.publish(self.run_dir, updates, {
            "recipe": self.recipe.name, "fingerprint": self.recipe.fingerprint(),
            "method": self.recipe.method.model_dump(), "last_step": updates - 1,
            "resume_state": ckpt.has_resume_state(staging), **self.manifest})
        metrics = self.store.metrics()
        ckpt.update_best(self.run_dir, metrics, self.recipe.checkpoint.every)
        ckpt.prune(self.run_dir, self.recipe.checkpoint.keep_last)
        ckpt.drop_resume_state(self.run_dir)
        return target
