"""The OpenRLHF executor on the real sandbox and environments, against a seeded fake of
vLLM's async engine, driven the way OpenRLHF drives it (N concurrent calls per prompt)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _fake_vllm import FakeEngine, install, run_steps
from spade.train.openrlhf import SlotLabel, TicketExecutor
from spade.train.openrlhf._flags import Layout
from spade.train.openrlhf._launch import prepare_run
from spade.train.recipe import load_recipe

from spade.store import DB_NAME

pytestmark = pytest.mark.bwrap


def _recipe() -> Any:
    return load_recipe("tiny").with_overrides(steps=2)


@pytest.fixture()
def prepared(tmp_path: Path, cache_env: Path, tiny_model_dir: Path, monkeypatch: Any
             ) -> tuple[Path, Any, FakeEngine]:
    install(monkeypatch)
    recipe = _recipe()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepare_run(Layout(run_dir, str(tiny_model_dir)), recipe, recipe.identity())
    return run_dir, recipe, FakeEngine(tiny_model_dir)


def test_two_steps_roles_groups_and_metrics(prepared: tuple[Path, Any, FakeEngine]) -> None:
    run_dir, recipe, engine = prepared
    executor = TicketExecutor()
    try:
        step0, step1 = run_steps(executor, engine, run_dir, recipe, 2)
    finally:
        executor.close()
    g = recipe.grpo
    for step, groups in ((0, step0), (1, step1)):
        assert len(groups) == g.tickets_per_step
        for k, group in enumerate(groups):
            assert len(group) == g.group_size
            roles = {s["extra_logs"]["spade/designer"] for s in group}
            assert len(roles) == 1, "a GRPO group has one role"
            designer = roles == {1.0}
            assert designer == (step == 0 and k < recipe.designer_tickets(0))
            assert {s["extra_logs"]["spade/step"] for s in group} == {float(step)}
            # SPADE's advantage is the reward OpenRLHF normalises: group mean 0
            assert abs(sum(s["reward"] for s in group)) < 1e-6
            keys = {tuple(sorted(s["extra_logs"])) for s in group}
            assert len(keys) == 1
            for s in group:
                n = len(s["observation_tokens"])
                assert s["rollout_log_probs"] is None or len(s["rollout_log_probs"]) == n
                for a, b in s["action_ranges"]:
                    assert 0 < a < b <= n
    # every sibling sampled its own stream: no two requests shared a seed
    seeds = [seed for _, seed in engine.requests]
    assert None not in seeds and len(set(seeds)) == len(seeds)
    # the last ticket of each step closed it in the run store, like the TRL loop
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    metrics = [json.loads(x) for x in lines]
    assert [m["step"] for m in metrics] == [0, 1]
    assert metrics[0]["designer"]["designs"] == recipe.selfplay.designer.designs_per_prompt
    assert metrics[1]["designer"] is None
    assert all(m["backend"] == "openrlhf" for m in metrics)
    assert (run_dir / DB_NAME).is_file()
    assert (run_dir / "openrlhf" / "store" / "step-2.db").is_file()
    # the siblings of an agent ticket all played the same pool environment
    conn = sqlite3.connect(run_dir / DB_NAME)
    rows = conn.execute("SELECT env_id, extra FROM plays WHERE cycle = 1").fetchall()
    conn.close()
    by_ticket: dict[str, set[str]] = {}
    for env_id, extra in rows:
        by_ticket.setdefault(json.loads(extra)["ticket"], set()).add(env_id)
    assert len(by_ticket) == recipe.grpo.tickets_per_step
    assert all(len(envs) == 1 for envs in by_ticket.values())


def test_bad_label_is_refused() -> None:
    with pytest.raises(ValueError, match="not a SPADE ticket label"):
        SlotLabel.from_json("{\"prompt\": 1}")
