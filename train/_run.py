"""One training run from a recipe and a run directory, whatever the backend.

The run directory is the run's identity (recipe without the step count, model sha256):
running again with the same directory resumes from its latest checkpoint; ``resume=True``
insists on an existing run; ``new_run`` moves an existing directory aside. Progress made
after the latest checkpoint (or before the first) is recomputed: the run store is put back
to the checkpoint's copy, so weights and run state always match.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.train import _checkpoint as ckpt
from spade.train._models import check_device, load_model, model_summary, resolve_model_dir
from spade.train._pool import EnvPool
from spade.train._state import TrainStore, restore_snapshot
from spade.train.recipe import TrainRecipe

from spade.errors import UserError
from spade.identity import model_identity
from spade.rundir import claim_run_dir
from spade.store import DB_NAME

__all__ = ["TrainSummary", "run_identity", "run_training"]

_OWN = {DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal", ".state.lock",
        "metrics.jsonl", ckpt.CHECKPOINTS, "tensorboard", "openrlhf",
        "warmstart"}


@dataclass
class TrainSummary:
    run_dir: Path
    steps_done: int
    checkpoints: list[int] = field(default_factory=list)
    trainer: Any = field(default=None, repr=False)

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / "metrics.jsonl"


def run_identity(recipe: TrainRecipe, model_dir: Path) -> dict[str, Any]:
    """What a run directory is bound to: the recipe (without its step count) and the model's
    identity (:mod:`spade.identity`, the one evaluation records too)."""
    return {**recipe.identity(), "model_sha256": model_identity(model_dir).sha256}


def _reset_store(run_dir: Path) -> None:
    """Drop run state that has no checkpoint to go with it (it is recomputed)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(run_dir / f"{DB_NAME}{suffix}")


def _open_store(run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any]
                ) -> tuple[TrainStore, int | None]:
    """The store, rolled back to the latest checkpoint; returns it and that checkpoint."""
    store = TrainStore.open(run_dir, recipe, resume=True, identity=identity)
    ckpt.clean_staging(run_dir)
    steps = ckpt.checkpoint_steps(run_dir)
    latest = steps[-1] if steps else None
    if latest is None and store.last_step() is None:
        return store, None
    store.close()
    if latest is None:
        _reset_store(run_dir)
    else:
        restore_snapshot(run_dir, ckpt.step_dir(run_dir, latest))
    store = TrainStore.open(run_dir, recipe, resume=True, identity=identity)
    store.write_metrics()
    return store, latest


def _tensorboard(run_dir: Path, enabled: bool, say: Callable[[str], None]) -> Any:
    if not enabled:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        say("tensorboard is not installed: metrics go to metrics.jsonl only")
        return None
    return SummaryWriter(str(run_dir / "tensorboard"))


def run_training(recipe: TrainRecipe, run_dir: Path, *, backend: str | None = None,
                 resume: bool = False, new_run: bool = False,
                 say: Callable[[str], None] = print,
                 report: Callable[[int, dict[str, Any]], None] | None = None,
                 initial_pool: EnvPool | None = None, keep_trainer: bool = False
                 ) -> TrainSummary:
    """Train ``recipe`` in ``run_dir`` until ``recipe.steps`` updates are checkpointed."""
    backend = backend or recipe.backend
    if backend not in ("trl", "openrlhf"):
        raise UserError(f"unknown backend {backend!r} (trl or openrlhf)")
    if backend == "openrlhf":
        from spade.train.openrlhf import check_recipe

        check_recipe(recipe)
    device = check_device(recipe.model)
    model_dir = resolve_model_dir(recipe.model)
    identity = run_identity(recipe, model_dir)
    if recipe.warm_start.enabled:
        if backend != "trl":
            raise UserError("warm_start runs on the trl backend only")
        from spade.train._warmstart import load_data

        identity["warm_start_data_sha256"] = load_data(recipe.warm_start).sha256
    claim_run_dir(run_dir, holds_run=lambda p: (p / DB_NAME).is_file(), own_names=_OWN,
                  resume=resume, new_run=new_run, say=say)
    store, latest = _open_store(run_dir, recipe, identity)
    try:
        done = 0 if latest is None else latest
        if done >= recipe.steps:
            say(f"all {recipe.steps} steps are already checkpointed in {run_dir}")
            return TrainSummary(run_dir, done, ckpt.checkpoint_steps(run_dir))
        if latest is not None:
            say(f"resuming from {ckpt.step_dir(run_dir, latest)}")
        if backend == "openrlhf":
            from spade.train.openrlhf import launch

            done = launch(recipe, run_dir, store, latest, model_dir, identity, say)
            return TrainSummary(run_dir, done, ckpt.checkpoint_steps(run_dir))
        return _train(recipe, run_dir, store, model_dir, device, identity, latest, say, report,
                      initial_pool, keep_trainer)
    finally:
        store.close()


def _train(recipe: TrainRecipe, run_dir: Path, store: TrainStore, model_dir: Path, device: str,
           identity: dict[str, Any], latest: int | None, say: Callable[[str], None],
           report: Callable[[int, dict[str, Any]], None] | None, initial_pool: EnvPool | None,
           keep_trainer: bool) -> TrainSummary:
    from spade.train._driver import StepDriver
    from spade.train.trl import train_with_trl

    from spade.cycle._setup import sandbox_limits
    from spade.diversity import make_embedder
    from spade.sandbox import Sandbox

    cfg = recipe.selfplay
    model, tokenizer = load_model(model_dir, device, recipe.model.dtype)
    tensorboard = _tensorboard(run_dir, recipe.tensorboard, say)
    manifest = {"model": model_summary(model_dir), "model_sha256": identity["model_sha256"],
                "base_model": str(model_dir), "backend": "trl"}
    if recipe.warm_start.enabled:
        from spade.train._warmstart import finished_summary, run_warm_start

        manifest["warm_start"] = (run_warm_start(recipe, run_dir, model, tokenizer, device, say)
                                  if latest is None else finished_summary(run_dir))
    with contextlib.ExitStack() as stack:
        sandbox = stack.enter_context(Sandbox(cfg.sandbox.isolation, sandbox_limits(cfg),
                                              allow_weak=cfg.sandbox.allow_weak))
        embedder = make_embedder(cfg.diversity.embedder)
        if tensorboard is not None:
            stack.callback(tensorboard.close)

        def driver(generator: Any) -> StepDriver:
            return StepDriver(recipe, store, generator, sandbox, embedder,
                              initial_pool=initial_pool, report=report,
                              tensorboard=tensorboard, manifest=manifest, say=say)

        resume_from = None if latest is None else ckpt.step_dir(run_dir, latest)
        trainer = train_with_trl(recipe, run_dir, driver, model, tokenizer, device, resume_from)
    steps = ckpt.checkpoint_steps(run_dir)
    return TrainSummary(run_dir, steps[-1] if steps else 0, steps,
                        trainer if keep_trainer else None)
