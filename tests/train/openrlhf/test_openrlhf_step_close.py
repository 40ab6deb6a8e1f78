"""Both trainer backends close a step and publish a checkpoint through the same functions
(``spade.train._driver``): the TRL backend through its ``StepDriver``, OpenRLHF from the rollout
actor that records a step's last ticket and from the launcher that publishes its exports.

The OpenRLHF side runs as the executor tests run it (real ``TicketExecutor``, shared run
state, sandbox and environments, a seeded stand-in of vLLM's engine over the tiny model);
the TRL side is the ``StepDriver`` on the same engine's policy, without an update."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _fake_vllm import FakeEngine, install, run_steps
from spade.train import _checkpoint as ckpt
from spade.train import _driver
from spade.train._state import TrainStore
from spade.train.openrlhf import TicketExecutor, publish_ready
from spade.train.openrlhf._flags import Layout
from spade.train.openrlhf._launch import prepare_run
from spade.train.recipe import TrainRecipe, load_recipe

pytestmark = pytest.mark.bwrap

CALLS = ("close_rollout", "commit_step", "publish_checkpoint", "rotate_checkpoints")


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of the driver's step-close and publish functions, in order."""
    seen: list[str] = []

    def spy(name: str) -> Any:
        real = getattr(_driver, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return real(*args, **kwargs)

        return wrapper

    for name in CALLS:
        monkeypatch.setattr(_driver, name, spy(name))
    return seen


def _export(model_dir: Path, target: Path) -> Path:
    """A complete model directory where a backend leaves one for publishing."""
    shutil.copytree(model_dir, target)
    return target


def trl_step(recipe: TrainRecipe, run_dir: Path, policy: Any, model_dir: Path) -> None:
    """One step and its checkpoint through the ``StepDriver`` the TRL backend drives."""
    from spade.cycle._setup import sandbox_limits
    from spade.diversity import make_embedder
    from spade.sandbox import Sandbox

    cfg = recipe.selfplay
    store = TrainStore.open(run_dir, recipe, resume=False)
    try:
        with Sandbox(cfg.sandbox.isolation, sandbox_limits(cfg),
                     allow_weak=cfg.sandbox.allow_weak) as sandbox:
            driver = _driver.StepDriver(recipe, store, policy, sandbox,
                                        make_embedder(cfg.diversity.embedder))
            driver.rollout(0)
            driver.complete(0, {"loss": 0.0}, 0.0)
            driver.checkpoint(1, _export(model_dir, ckpt.staging_dir(run_dir, 1)))
    finally:
        store.close()


def openrlhf_step(recipe: TrainRecipe, run_dir: Path, engine: FakeEngine,
                  model_dir: Path) -> None:
    """One OpenRLHF step (its tickets on the executor) and the export of its weights."""
    prepare_run(Layout(run_dir, str(model_dir)), recipe, recipe.identity())
    executor = TicketExecutor()
    try:
        run_steps(executor, engine, run_dir, recipe, 1)
    finally:
        executor.close()
    _export(model_dir, Layout(run_dir, "").ckpt / "global_step1_hf")
    assert publish_ready(run_dir, recipe, recipe.identity(), {"backend": "openrlhf"},
                         final=True) == [1]


def test_both_backends_close_and_publish_through_the_driver(
        tmp_path: Path, cache_env: Path, tiny_model_dir: Path,
        monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    install(monkeypatch)
    recipe = load_recipe("tiny").with_overrides(steps=1)
    engine = FakeEngine(tiny_model_dir)
    runs = {"openrlhf": tmp_path / "openrlhf", "trl": tmp_path / "trl"}
    for run_dir in runs.values():
        run_dir.mkdir()
    openrlhf_step(recipe, runs["openrlhf"], engine, tiny_model_dir)
    assert calls == list(CALLS)
    calls.clear()
    trl_step(recipe, runs["trl"], engine.policy, tiny_model_dir)
    assert calls == list(CALLS)
    lines = {b: json.loads((d / "metrics.jsonl").read_text()) for b, d in runs.items()}
    assert lines["openrlhf"]["backend"] == "openrlhf" and "backend" not in lines["trl"]
    assert set(lines["openrlhf"]) - {"backend"} == set(lines["trl"])
    assert lines["openrlhf"]["timing_s"]["update_s"] is None
    assert lines["trl"]["train"] == {"loss": 0.0} and lines["trl"]["timing_s"]["update_s"] == 0
    for backend, run_dir in runs.items():
        manifest = json.loads((ckpt.step_dir(run_dir, 1) / ckpt.MANIFEST).read_text())
        assert (manifest["step"], manifest["last_step"], manifest["recipe"]) == (
            1, 0, recipe.name), backend
        assert manifest["method"] == recipe.method.model_dump(), backend
        assert ckpt.checkpoint_steps(run_dir) == [1]
