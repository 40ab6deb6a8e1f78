"""SIGKILL a writer at random moments and inside a transaction; resume; compare."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from spade.store import RunStore

WRITER = Path(__file__).with_name("_writer.py")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(WRITER.parent))
from _writer import CONFIG, ENVS_PER_CYCLE  # noqa: E402


def _run_writer(run_dir: Path, n_cycles: int, payload: int, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(WRITER), str(run_dir), str(n_cycles),
                             str(payload), *extra], env=env)


def _dump(run_dir: Path) -> dict[str, Any]:
    with RunStore.open(run_dir, CONFIG, resume=True) as store:
        state = store.load_state()
        return {"envs": store.environments(), "plays": store.plays(),
                "metrics": store.metrics(), "state": state}


def _check_consistent(run_dir: Path) -> int | None:
    """Integrity + every completed cycle whole, nothing of an incomplete one visible."""
    with RunStore.open(run_dir, CONFIG, resume=True) as store:
        assert store.integrity_ok()
        last = store.last_completed_cycle()
        done = list(range(last + 1)) if last is not None else []
        assert store.completed_cycles() == done
        assert sorted({e.cycle for e in store.environments()}) == done
        assert sorted({p.cycle for p in store.plays()}) == sorted(
            {e.cycle for e in store.environments(valid=True)})
        assert [c for c, _ in store.metrics()] == done
        for cycle in done:
            assert len(store.environments(cycle=cycle)) == ENVS_PER_CYCLE
        state = store.load_state()
        if last is not None:
            assert state is not None and state.cycle == last
            assert state.metrics["cycle"] == last and state.sampler["position"] == 4 * (last + 1)
            valid_ids = [e.env_id for e in store.environments(valid=True)]
            assert state.memory["ids"] == valid_ids[-50:]
        return last


def test_kill_inside_the_transaction_keeps_previous_cycle(tmp_path: Path) -> None:
    proc = _run_writer(tmp_path, 6, 1000, "3")
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert _check_consistent(tmp_path) == 2
    assert _run_writer(tmp_path, 6, 1000).wait(timeout=60) == 0
    assert _check_consistent(tmp_path) == 5
    reference = tmp_path / "reference"
    assert _run_writer(reference, 6, 1000).wait(timeout=60) == 0
    assert _dump(tmp_path) == _dump(reference)


def _wait_for_cycle(db: Path, target: int, proc: subprocess.Popen[bytes]) -> None:
    """Poll (read-only, concurrently with the writer) until ``target`` is completed."""
    while proc.poll() is None:
        if db.exists():
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
            try:
                row = conn.execute("SELECT MAX(cycle) FROM cycles").fetchone()
            except sqlite3.OperationalError:  # schema not created yet
                row = (None,)
            finally:
                conn.close()
            if row[0] is not None and row[0] >= target:
                return
        time.sleep(0.002)


def _kill_loop(tmp_path: Path, n_kills: int, seed: int, n_cycles: int) -> list[int | None]:
    """Kill the writer a random few cycles further each time, at a random point of a cycle."""
    payload = 400_000
    rng = random.Random(seed)
    run_dir = tmp_path / "killed"
    seen: list[int | None] = []
    last = -1
    for _ in range(n_kills):
        proc = _run_writer(run_dir, n_cycles, payload)
        _wait_for_cycle(run_dir / "state.db", last + rng.randint(1, 4), proc)
        time.sleep(rng.uniform(0.0, 0.03))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        seen.append(_check_consistent(run_dir))
        last = seen[-1] if seen[-1] is not None else -1
    assert _run_writer(run_dir, n_cycles, payload).wait(timeout=120) == 0
    assert _check_consistent(run_dir) == n_cycles - 1
    reference = tmp_path / "reference"
    assert _run_writer(reference, n_cycles, payload).wait(timeout=120) == 0
    assert _dump(run_dir) == _dump(reference)
    assert seen  # at least one kill landed before the run finished
    return seen


def test_random_sigkills_then_resume_matches_uninterrupted(tmp_path: Path) -> None:
    _kill_loop(tmp_path, n_kills=1, seed=0, n_cycles=8)


@pytest.mark.slow
def test_many_random_sigkills(tmp_path: Path) -> None:
    seen = _kill_loop(tmp_path, n_kills=12, seed=1, n_cycles=60)
    print("last completed cycle after each kill:", seen)
