"""Run stores written by schema 1 (the trainer's pool inside the RNG blob) still open and
resume: opening moves the pool into its own ``env_pool`` blob."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from spade.store import SCHEMA_VERSION, RunStore, config_fingerprint, random_state
from spade.store._store import DB_NAME

CONFIG = {"seed": 3}
POOL = {"generation": 2, "envs": [{"env_id": "g0002-a", "source": "# a\n", "hint": "h",
                                   "generation": 2, "skill": None, "origin": "designed"}]}

#: The tables exactly as schema 1 created them.
_SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE cycles (
    cycle INTEGER PRIMARY KEY, completed_at TEXT NOT NULL,
    n_envs INTEGER NOT NULL, n_plays INTEGER NOT NULL);
CREATE TABLE environments (
    env_id TEXT PRIMARY KEY, cycle INTEGER NOT NULL, source TEXT NOT NULL,
    valid INTEGER NOT NULL, hint TEXT, skill TEXT, doc_id TEXT, verdict TEXT,
    solve_rate_hinted REAL, solve_rate_unhinted REAL, regret REAL, designer_reward REAL,
    extra TEXT NOT NULL);
CREATE INDEX environments_cycle ON environments (cycle);
CREATE TABLE plays (
    cycle INTEGER NOT NULL, env_id TEXT NOT NULL,
    arm TEXT NOT NULL CHECK (arm IN ('hinted', 'unhinted')), idx INTEGER NOT NULL,
    seed INTEGER NOT NULL, ret REAL NOT NULL, stop_reason TEXT NOT NULL,
    turns INTEGER NOT NULL, extra TEXT NOT NULL,
    PRIMARY KEY (cycle, env_id, arm, idx));
CREATE TABLE snapshots (
    cycle INTEGER NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (cycle, kind));
CREATE TABLE metrics (cycle INTEGER PRIMARY KEY, metrics TEXT NOT NULL);
"""


def _schema_1_store(run_dir: Path, rng_blobs: list[Any]) -> None:
    """A store as schema 1 wrote it: one completed cycle per entry of ``rng_blobs``."""
    run_dir.mkdir(parents=True)
    conn = sqlite3.connect(run_dir / DB_NAME)
    conn.executescript(_SCHEMA_1)
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [
        ("schema_version", "1"), ("fingerprint", config_fingerprint(CONFIG)),
        ("config", json.dumps(CONFIG, sort_keys=True)), ("created", "2026-01-01T00:00:00")])
    for cycle, rng in enumerate(rng_blobs):
        conn.executemany("INSERT INTO snapshots VALUES (?, ?, ?)", [
            (cycle, "memory", json.dumps({"m": cycle})), (cycle, "sampler", "null"),
            (cycle, "rng", json.dumps(rng))])
        conn.execute("INSERT INTO metrics VALUES (?, ?)", (cycle, json.dumps({"step": cycle})))
        conn.execute("INSERT INTO cycles VALUES (?, '2026-01-01T00:00:00', 0, 0)", (cycle,))
    conn.commit()
    conn.close()


def test_trainer_store_of_schema_1_resumes_with_its_pool(tmp_path: Path) -> None:
    run = random_state(random.Random(5))
    _schema_1_store(tmp_path / "run", [{"run": run, "pool": POOL}] * 2)
    with RunStore.open(tmp_path / "run", CONFIG, resume=True) as store:
        state = store.load_state()
        assert state is not None and state.cycle == 1
        assert state.rng == {"run": run} and state.env_pool == POOL
        version = store._conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)
        store.commit_cycle(2, [], [], {"m": 2}, None, {"run": run}, {"step": 2},
                           env_pool={**POOL, "generation": 3})
    with RunStore.open(tmp_path / "run", CONFIG, resume=True) as store:  # idempotent
        state = store.load_state()
        assert state is not None and state.cycle == 2 and state.env_pool["generation"] == 3
        assert store.integrity_ok()


def test_self_play_store_of_schema_1_has_no_pool(tmp_path: Path) -> None:
    run = random_state(random.Random(7))
    _schema_1_store(tmp_path / "run", [{"run": run}])
    with RunStore.open(tmp_path / "run", CONFIG, resume=True) as store:
        state = store.load_state()
        assert state is not None and state.rng == {"run": run} and state.env_pool is None


def test_schema_1_store_for_another_config_is_refused_unchanged(tmp_path: Path) -> None:
    _schema_1_store(tmp_path / "run", [{"run": [], "pool": POOL}])
    with pytest.raises(Exception, match="different config"):
        RunStore.open(tmp_path / "run", {"seed": 4}, resume=True)
    conn = sqlite3.connect(tmp_path / "run" / DB_NAME)
    kinds = {k for (k,) in conn.execute("SELECT kind FROM snapshots")}
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert kinds == {"memory", "sampler", "rng"} and version == ("1",)
