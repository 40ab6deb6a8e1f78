"""Fixed-environment baselines on the OpenRLHF path draw what the shared loop draws.

The OpenRLHF path is executed the way the other executor tests do it: the real
``TicketExecutor`` and shared run state, the real sandbox and problem sources, and a seeded
stand-in of vLLM's async engine over the tiny model; its tickets run concurrently, one at a
time each. The reference is the shared step loop the TRL backend drives (``StepDriver``,
whole steps; with the real TRL trainer in the slow test). Both must draw the same problem
for every ticket and end every step with the same ``fixed_env`` metrics (difficulty
windows, pool coverage, the source state). The RLVE windows are set to move after every
4 plays at ``high`` whatever the outcome, so a step's draws depend on every earlier step's
outcomes having been folded in exactly once, in ticket order.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from _fake_vllm import FakeEngine, install, run_steps
from spade.train.openrlhf import TicketExecutor
from spade.train.openrlhf._flags import Layout
from spade.train.openrlhf._launch import prepare_run
from spade.train.recipe import TrainRecipe, bundled_recipe, load_recipe

from spade.cycle._metrics import without_timing
from spade.store import DB_NAME

pytestmark = pytest.mark.bwrap

STEPS = 3
#: Two environments for three tickets: one environment is drawn twice in a step, and its
#: window moves (tau_acc 0) after 4 plays at high, i.e. within one ticket.
RLVE = {"kind": "rlve", "environments": ["Multiplication", "Sorting"],
        "window": {"tau_num": 4, "tau_acc": 0.0, "width": 4, "initial": 0}}


def _on_tiny(name: str, tmp_path: Path, **extra: Any) -> TrainRecipe:
    """The baseline recipe's own settings on top of the tiny recipe."""
    own = yaml.safe_load(bundled_recipe(name).read_text(encoding="utf-8"))
    assert own.pop("extends") == "paper_games.yaml"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"extends": "tiny", **own, "steps": STEPS, **extra}))
    return load_recipe(path)


def _recipe(kind: str, tmp_path: Path) -> TrainRecipe:
    if kind == "rlve":
        return _on_tiny("baseline_rlve", tmp_path, fixed_env=RLVE)
    return _on_tiny(f"baseline_{kind}", tmp_path)



@pytest.fixture()
def env(static_pool: Path, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPADE_STATIC_POOL", str(static_pool))
    return cache_env


@pytest.fixture()
def vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine stand-in's ``vllm`` module (after TRL is imported: TRL probes vllm)."""
    install(monkeypatch)


def draws(run_dir: Path) -> list[list[tuple[int, str, int]]]:
    """Per step, per ticket: (ticket index, environment, seed) of its plays (one each)."""
    conn = sqlite3.connect(run_dir / DB_NAME)
    try:
        rows = conn.execute("SELECT cycle, idx, env_id, seed FROM plays").fetchall()
    finally:
        conn.close()
    steps: dict[int, set[tuple[int, str, int]]] = {}
    for step, index, env_id, seed in rows:
        steps.setdefault(step, set()).add((index // 1000, env_id, seed))
    return [sorted(steps[s]) for s in sorted(steps)]


def fixed(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [without_timing(json.loads(x)["fixed_env"]) for x in lines]


def openrlhf_run(recipe: TrainRecipe, run_dir: Path, model_dir: Path, engine: FakeEngine,
                 steps: int) -> None:
    """``steps`` OpenRLHF steps from whatever the run store holds (a launch or a resume),
    the slots spread over two executors (two vLLM actors: neither sees every ticket)."""
    run_dir.mkdir(exist_ok=True)
    prepare_run(Layout(run_dir, str(model_dir)), recipe, recipe.identity())
    executors = [TicketExecutor(), TicketExecutor()]
    try:
        run_steps(executors, engine, run_dir, recipe, steps)
    finally:
        for executor in executors:
            executor.close()


def loop_run(recipe: TrainRecipe, run_dir: Path, policy: Any) -> None:
    """The shared step loop on whole steps, without an update (the weights stay those the
    fake engine serves)."""
    from spade.train._driver import StepDriver
    from spade.train._state import TrainStore

    from spade.cycle._setup import sandbox_limits
    from spade.diversity import make_embedder
    from spade.sandbox import Sandbox

    cfg = recipe.selfplay
    store = TrainStore.open(run_dir, recipe, resume=False)
    try:
        with Sandbox(cfg.sandbox.isolation, sandbox_limits(cfg),
                     allow_weak=cfg.sandbox.allow_weak) as sandbox:
            driver = StepDriver(recipe, store, policy, sandbox,
                                make_embedder(cfg.diversity.embedder))
            for step in range(recipe.steps):
                driver.rollout(step)
                driver.complete(step, {}, 0.0)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["rlve", "static_pool"])
@pytest.mark.usefixtures("vllm")
def test_openrlhf_draws_what_the_shared_loop_draws(kind: str, tmp_path: Path, env: Path,
                                                   tiny_model_dir: Path) -> None:
    recipe = _recipe(kind, tmp_path)
    engine = FakeEngine(tiny_model_dir)
    openrlhf_run(recipe, tmp_path / "openrlhf", tiny_model_dir, engine, STEPS)
    loop_run(recipe, tmp_path / "loop", engine.policy)
    # same problem, different samples: the plays of a group never share a sampling stream
    requests = [(tuple(ids), seed) for ids, seed in engine.requests]  # the OpenRLHF run
    assert None not in {seed for _, seed in requests} and len(set(requests)) == len(requests)
    got, want = draws(tmp_path / "openrlhf"), draws(tmp_path / "loop")
    assert len(got) == STEPS and all(len(s) == recipe.grpo.tickets_per_step for s in got)
    assert got == want
    assert fixed(tmp_path / "openrlhf") == fixed(tmp_path / "loop")
    blocks = fixed(tmp_path / "openrlhf")
    if kind == "rlve":
        # the windows moved, so later draws depended on earlier steps' folded outcomes
        highs = [max(w["high"] for w in b["difficulty"].values()) for b in blocks]
        assert highs[0] >= 1 and highs[-1] > highs[0]
        assert len({env_id for step in got for _, env_id, _ in step}) > 2
    else:
        pools = [b["pool"] for b in blocks]
        assert [p["drawn"] for p in pools] == [
            recipe.grpo.tickets_per_step * (s + 1) for s in range(STEPS)]
        assert pools[-1]["coverage"] == min(1.0, pools[-1]["drawn"] / pools[-1]["size"])
    # the source state the next step starts from is the one the last step committed
    shared = sqlite3.connect(tmp_path / "openrlhf" / "openrlhf" / "shared.db")
    [(value,)] = shared.execute("SELECT value FROM kv WHERE key = 'fixed_env'").fetchall()
    shared.close()
    assert json.loads(value) == {"step": STEPS, "state": blocks[-1]["state"]}


@pytest.mark.usefixtures("vllm")
def test_openrlhf_resume_continues_the_source_state(tmp_path: Path, env: Path,
                                                    tiny_model_dir: Path) -> None:
    """Stopped after step 0 and launched again, the run draws and ends as in one go."""
    recipe = _recipe("rlve", tmp_path).with_overrides(steps=2)
    engine = FakeEngine(tiny_model_dir)
    openrlhf_run(recipe, tmp_path / "whole", tiny_model_dir, engine, 2)
    openrlhf_run(recipe, tmp_path / "part", tiny_model_dir, engine, 1)
    openrlhf_run(recipe, tmp_path / "part", tiny_model_dir, engine, 1)
    assert draws(tmp_path / "part") == draws(tmp_path / "whole")
    assert fixed(tmp_path / "part") == fixed(tmp_path / "whole")


@pytest.mark.usefixtures("vllm")
def test_a_ticket_recorded_twice_is_folded_once(tmp_path: Path, env: Path,
                                                tiny_model_dir: Path) -> None:
    """A retried ticket replaces its first result: the step's outcomes count once."""
    import asyncio

    from spade.train.openrlhf._executor import _build_runtime

    still = {**RLVE, "window": {**RLVE["window"], "tau_num": 128}}  # no window moves
    recipe = _on_tiny("baseline_rlve", tmp_path, fixed_env=still, steps=1)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepare_run(Layout(run_dir, str(tiny_model_dir)), recipe, recipe.identity())
    engine = FakeEngine(tiny_model_dir)

    async def go() -> None:
        runtime = _build_runtime(run_dir, engine.tokenizer, engine, asyncio.get_running_loop(),
                                 4096)
        try:
            first = await asyncio.to_thread(runtime.run, 0)
            assert runtime.shared.record(first.ticket, first) is None  # the retry
            for slot in range(1, recipe.grpo.tickets_per_step):
                await asyncio.to_thread(runtime.run, slot)
        finally:
            for closer in runtime.closers:
                closer()

    asyncio.run(go())
    [block] = fixed(run_dir)
    attempts = sum(w["attempts_at_high"] for w in block["difficulty"].values())
    # every play is at high 0 and counts once; a group with an environment fault (a
    # timeout on a loaded machine) is not shown to the controller
    conn = sqlite3.connect(run_dir / DB_NAME)
    extras = [json.loads(x) for (x,) in conn.execute("SELECT extra FROM plays")]
    conn.close()
    tickets: dict[str, list[bool]] = {}
    for extra in extras:
        tickets.setdefault(extra["ticket"], []).append(bool(extra["env_fault"]))
    counted = sum(len(f) for f in tickets.values() if not any(f))
    assert len(tickets) == recipe.grpo.tickets_per_step and counted > 0
    assert attempts == counted, block["difficulty"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rlve", "reasoning_gym", "static_pool"])
def test_openrlhf_draws_what_a_trl_run_draws(kind: str, tmp_path: Path, env: Path,
                                             tiny_model_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The same baseline recipe and seed on the real TRL backend (which trains between
    steps) and on the OpenRLHF path: the same problems, the same fixed-environment
    metrics. The tiny random model solves nothing on either, so the solve rates agree
    although the TRL weights move."""
    pytest.importorskip("trl")
    from spade.train._run import run_training

    recipe = _recipe(kind, tmp_path).with_overrides(steps=2)
    run_training(recipe, tmp_path / "trl", say=lambda *_: None)
    install(monkeypatch)
    openrlhf_run(recipe, tmp_path / "openrlhf", tiny_model_dir, FakeEngine(tiny_model_dir), 2)
    assert draws(tmp_path / "openrlhf") == draws(tmp_path / "trl")
    assert fixed(tmp_path / "openrlhf") == fixed(tmp_path / "trl")
