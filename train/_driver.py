"""The one training loop every backend drives: plan, roll out, commit, checkpoint, report.

A backend owns the model and the optimiser; it calls, for every optimiser step ``s``:

    results = driver.rollout(s)              # tickets of step s -> samples (and state)
    ... its own GRPO update on ``driver.samples(results)`` ...
    driver.complete(s, train_metrics, update_s)   # commit to the run store, metrics, TB
    driver.checkpoint(s + 1, staging_dir)    # when due: store snapshot + atomic publish

so planning, the run store, metrics, TensorBoard, best/keep_last and progress are shared.
Steps are numbered from 0; a checkpoint ``step-N`` holds the weights after N updates
(steps 0..N-1) and the run store as of that moment.

A backend that runs a step's tickets in other processes (OpenRLHF's rollout actors) cannot
hold one ``StepDriver``; it closes and publishes with the same functions the driver uses:
:func:`close_rollout` (the pool advances, the step's metrics line), :func:`commit_step`
(the update's numbers, one committed transaction, ``metrics.jsonl``),
:func:`publish_checkpoint` and :func:`rotate_checkpoints` (best, keep_last, resume state).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from spade.train import _checkpoint as ckpt
from spade.train._metrics import flatten, step_metrics
from spade.train._pool import EnvPool
from spade.train._rollout import Generator, Rollout, RolloutState, Sample, TicketResult, finish_step
from spade.train._state import SNAPSHOT, TrainStore
from spade.train._tickets import Role, plan_step
from spade.train.baselines import BaselineRollout
from spade.train.designers import frozen_designer, hint_writer
from spade.train.recipe import TrainRecipe

from spade.diversity import Embedder
from spade.sandbox import Sandbox

__all__ = ["StepDriver", "close_rollout", "commit_step", "publish_checkpoint",
           "rollout_for", "rotate_checkpoints"]

Reporter = Callable[[int, dict[str, Any]], None]


def close_rollout(recipe: TrainRecipe, step: int, state: RolloutState,
                  results: list[TicketResult], rollout_s: float,
                  fixed_env: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The rollout half of closing step ``step``: the pool advances (a regeneration becomes
    the pool) and the step's metrics line is made, with the method and, for a
    fixed-environment baseline, ``fixed_env()``'s block."""
    changed = finish_step(state, results)
    metrics = step_metrics(step, state.pool, changed, results, rollout_s)
    metrics["method"] = recipe.method.model_dump()
    if fixed_env is not None:
        metrics["fixed_env"] = fixed_env()
    return metrics


def commit_step(store: TrainStore, step: int, state: RolloutState,
                results: list[TicketResult], metrics: dict[str, Any], first_pool: EnvPool,
                train: dict[str, Any], update_s: float | None,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Close step ``step``: the update's numbers (``update_s`` None: the backend times its
    update elsewhere) and ``extra`` join its metrics line, which is committed with the
    step's state in one transaction and rewritten into ``metrics.jsonl``."""
    metrics["train"] = train
    timing = metrics["timing_s"]
    timing["update_s"] = None if update_s is None else round(update_s, 6)
    if update_s is not None:
        timing["step_s"] = round(timing["rollout_s"] + update_s, 6)
    metrics.update(extra or {})
    store.commit(step, state, results, metrics, first_pool)
    store.write_metrics()
    return metrics


def publish_checkpoint(run_dir: Path, recipe: TrainRecipe, updates: int,
                       manifest: dict[str, Any]) -> Path:
    """Publish the staging directory of ``updates`` (``ckpt.staging_dir``: a complete model
    directory with the run-store snapshot of ``updates`` steps) as
    ``checkpoints/step-<updates>``; its manifest names the recipe and the method (the row
    its evaluation lands in)."""
    return ckpt.publish(run_dir, updates, {
        "recipe": recipe.name, "fingerprint": recipe.fingerprint(), "last_step": updates - 1,
        "method": recipe.method.model_dump(), **manifest})


def rotate_checkpoints(run_dir: Path, recipe: TrainRecipe,
                       metrics: Sequence[dict[str, Any]]) -> None:
    """After publishing: the best checkpoint by the run's metrics, the ``keep_last``
    newest kept, the resume state on the newest only."""
    ckpt.update_best(run_dir, metrics, recipe.checkpoint.every)
    ckpt.prune(run_dir, recipe.checkpoint.keep_last)
    ckpt.drop_resume_state(run_dir)


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
        core = self.rollout_core
        fixed_env = (partial(core.fixed_metrics, step) if isinstance(core, BaselineRollout)
                     else None)
        metrics = close_rollout(self.recipe, step, self.state, results,
                                time.perf_counter() - began, fixed_env)
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
        commit_step(self.store, step, self.state, results, metrics, self.first_pool, train,
                    update_s)
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
        target = publish_checkpoint(self.run_dir, self.recipe, updates, {
            "resume_state": ckpt.has_resume_state(staging), **self.manifest})
        rotate_checkpoints(self.run_dir, self.recipe, self.store.metrics())
        return target
