"""Run state shared by every rollout actor of one OpenRLHF run (process-safe).

OpenRLHF hands each ticket slot to whichever vLLM actor is least busy, so the memory,
corpus cursor, run RNG and pool that a ticket reads, and the results it leaves, live in
one place every actor process can reach: ``RUN_DIR/openrlhf/shared.db`` (SQLite, WAL)
guarded by POSIX advisory locks (``fcntl.flock``) on files beside it:

- ``state.lock`` — short critical sections: claim a slot, read the state, record a result;
- ``design.lock`` — held for a whole designer ticket, so designer tickets (which advance
  the memory, corpus cursor and RNG) run one after another, exactly as in the TRL loop,
  while agent tickets keep running.

A slot is claimed for the lowest step it has not yet run (OpenRLHF runs one step's
batch to completion before the next, so this is the current step). When the last ticket
of a step records its result, that process closes the step with the functions the TRL
loop's ``StepDriver`` closes it with (``spade.train._driver.close_rollout``: a regeneration
becomes the pool, the step's metrics line; ``spade.train._driver.commit_step``: one committed
transaction in the run store, ``metrics.jsonl``), then writes a store snapshot
``openrlhf/store/step-<N+1>.db`` that a checkpoint of N+1 updates will carry.

A fixed-environment baseline keeps one more entry: the problem source's state at the
start of the current step (``fixed_env``: RLVE's difficulty windows, the static pool's
position). Every executor puts its source back to that state before a ticket
(:meth:`SharedRun.fixed_state`), so concurrent tickets draw what a whole-step run draws; the
step's close folds every ticket's outcomes into it once, in ticket order
(``spade.train.baselines.fold_step``), stores ``fixed_metrics`` in the step's metrics line (which
is how the run store and its checkpoint snapshots carry the state) and saves the new state
for the next step.

Every writer must be on one host: SQLite's WAL mode shares its index through memory,
which processes on different hosts cannot, and it does not support network filesystems.
So a run has one node (``cluster.nodes`` above 1 is refused before anything starts, see
``spade.train.openrlhf._flags.unsupported``); ``RUN_DIR`` is best on that node's local disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import pickle
import sqlite3
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from spade.train import _driver as driver
from spade.train._pool import EnvPool
from spade.train._rollout import RolloutState, TicketResult
from spade.train._state import TrainStore
from spade.train._tickets import Ticket, plan_step
from spade.train.baselines import fixed_metrics, fold_step
from spade.train.recipe import TrainRecipe

from spade.baselines import problem_source
from spade.corpus import CorpusSampler, SamplerState, load_corpus
from spade.cycle import CycleState
from spade.memory import Memory
from spade.store import random_state, restore_random

__all__ = ["SharedRun", "snapshot_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (step INTEGER, slot INTEGER, began REAL,
                                   PRIMARY KEY (step, slot));
CREATE TABLE IF NOT EXISTS results (step INTEGER, slot INTEGER, blob BLOB NOT NULL,
                                    PRIMARY KEY (step, slot));
"""


def snapshot_path(run_dir: Path, updates: int) -> Path:
    """The run-store copy as of ``updates`` completed steps."""
    return run_dir / "openrlhf" / "store" / f"step-{updates}.db"


class SharedRun:
    """The shared state of one run (see the module docstring)."""

    def __init__(self, run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.recipe = recipe
        self.identity = identity
        self.root = run_dir / "openrlhf"
        self._corpus: Any = None
        self._problems: Any = None

    # -- locking and storage --------------------------------------------------------
    @contextlib.contextmanager
    def _lock(self, name: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / name, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.root / "shared.db", timeout=60)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            with conn:
                yield conn
        finally:
            conn.close()

    def _get(self, conn: sqlite3.Connection, key: str) -> Any:
        row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise RuntimeError(f"{self.root / 'shared.db'} has no {key!r}: the launcher did "
                               "not initialise this run")
        return json.loads(row[0])

    @staticmethod
    def _put(conn: sqlite3.Connection, key: str, value: Any) -> None:
        conn.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, json.dumps(value)))

    # -- state (de)serialisation ----------------------------------------------------
    def _cycle_json(self, cycle: CycleState) -> dict[str, Any]:
        return {"memory": cycle.memory.to_dict(),
                "sampler": cycle.sampler.state.to_json() if cycle.sampler else None,
                "rng": random_state(cycle.rng)}

    def _cycle_from(self, data: dict[str, Any]) -> CycleState:
        sampler = None
        if data["sampler"] is not None:
            if self._corpus is None:
                cfg = self.recipe.selfplay
                self._corpus = load_corpus(cfg.corpus.path or cfg.designer.setting)
            sampler = CorpusSampler.restore(self._corpus, SamplerState.from_json(data["sampler"]))
        return CycleState(Memory.from_dict(data["memory"]), sampler, restore_random(data["rng"]))

    # -- the launcher's side --------------------------------------------------------
    def initialize(self, state: RolloutState, next_step: int, first_pool: EnvPool,
                   fixed_state: dict[str, Any] | None = None) -> None:
        """Start (or restart after a resume) from a committed state: no claims, no results.
        A baseline also needs its problem source's state at the start of ``next_step``."""
        if (fixed_state is None) != (self.recipe.fixed_env is None):
            raise ValueError("a fixed-environment run needs its source state (and only it)")
        with self._lock("state.lock"), self._db() as conn:
            conn.execute("DELETE FROM claims")
            conn.execute("DELETE FROM results")
            self._put(conn, "cycle", self._cycle_json(state.cycle))
            self._put(conn, "pool", state.pool.to_json())
            self._put(conn, "first_pool", first_pool.to_json())
            self._put(conn, "next_step", next_step)
            if fixed_state is not None:
                self._put(conn, "fixed_env", {"step": next_step, "state": fixed_state})

    # -- the executors' side --------------------------------------------------------
    def claim(self, slot: int) -> Ticket:
        """The ticket slot ``slot`` runs now (see the module docstring)."""
        if not 0 <= slot < self.recipe.grpo.tickets_per_step:
            raise ValueError(f"ticket slot {slot} outside 0..{self.recipe.grpo.tickets_per_step}")
        with self._lock("state.lock"), self._db() as conn:
            step = int(self._get(conn, "next_step"))
            while conn.execute("SELECT 1 FROM claims WHERE step = ? AND slot = ?",
                               (step, slot)).fetchone():
                step += 1
            conn.execute("INSERT INTO claims VALUES (?, ?, ?)", (step, slot, time.time()))
        return plan_step(self.recipe, step)[slot]

    def state(self) -> RolloutState:
        with self._lock("state.lock"), self._db() as conn:
            cycle, pool = self._get(conn, "cycle"), self._get(conn, "pool")
        return RolloutState(self._cycle_from(cycle), EnvPool.from_json(pool))

    def fixed_state(self, step: int) -> dict[str, Any]:
        """The problem source's state at the start of ``step`` (a baseline's ticket of
        ``step`` draws from exactly this)."""
        with self._lock("state.lock"), self._db() as conn:
            saved = self._get(conn, "fixed_env")
        if saved["step"] != step:
            raise RuntimeError(f"a ticket of step {step} ran while the shared source state "
                               f"is that of step {saved['step']}")
        return dict(saved["state"])

    def _fold(self, conn: sqlite3.Connection, step: int, results: list[TicketResult]
              ) -> dict[str, Any]:
        """The step's ``fixed_env`` metrics; saves the source state for step + 1."""
        if self._problems is None:
            if self.recipe.fixed_env is None:
                raise ValueError("not a fixed-environment run")
            self._problems = problem_source(self.recipe.fixed_env, self.recipe.seed)
        saved = self._get(conn, "fixed_env")
        if saved["step"] != step:
            raise RuntimeError(f"closing step {step} on the source state of step "
                               f"{saved['step']}")
        self._problems.restore(saved["state"])
        block = fixed_metrics(self._problems, step, fold_step(self._problems, results))
        self._put(conn, "fixed_env", {"step": step + 1, "state": block["state"]})
        return block

    @contextlib.contextmanager
    def designing(self) -> Iterator[RolloutState]:
        """Exclusive use of the designer state for one designer ticket; what the ticket
        changed (memory, corpus cursor, RNG) is saved when the block ends normally."""
        with self._lock("design.lock"):
            state = self.state()
            yield state
            with self._lock("state.lock"), self._db() as conn:
                self._put(conn, "cycle", self._cycle_json(state.cycle))

    def record(self, ticket: Ticket, result: TicketResult) -> dict[str, Any] | None:
        """Store a ticket's result; the process recording a step's last result closes the
        step and returns its metrics (else None)."""
        with self._lock("state.lock"), self._db() as conn:
            conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?)",
                         (ticket.step, ticket.index, pickle.dumps(result)))
            rows = conn.execute("SELECT slot, blob FROM results WHERE step = ? ORDER BY slot",
                                (ticket.step,)).fetchall()
            if len(rows) < self.recipe.grpo.tickets_per_step:
                return None
            results = [pickle.loads(blob) for _, blob in rows]
            began = conn.execute("SELECT MIN(began) FROM claims WHERE step = ?",
                                 (ticket.step,)).fetchone()[0]
            return self._close_step(conn, ticket.step, results, time.time() - began)

    def _close_step(self, conn: sqlite3.Connection, step: int, results: list[TicketResult],
                    seconds: float) -> dict[str, Any]:
        state = RolloutState(self._cycle_from(self._get(conn, "cycle")),
                             EnvPool.from_json(self._get(conn, "pool")))
        first = EnvPool.from_json(self._get(conn, "first_pool"))
        fixed_env = (partial(self._fold, conn, step, results)
                     if self.recipe.fixed_env is not None else None)
        metrics = driver.close_rollout(self.recipe, step, state, results, seconds, fixed_env)
        store = TrainStore.open(self.run_dir, self.recipe, resume=True, identity=self.identity)
        try:
            # the update's numbers are OpenRLHF's (its logger)
            driver.commit_step(store, step, state, results, metrics, first, train={},
                               update_s=None, extra={"backend": "openrlhf"})
            target = snapshot_path(self.run_dir, step + 1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            store.snapshot(target)
            if step % self.recipe.checkpoint.every:  # only checkpoint steps need theirs
                snapshot_path(self.run_dir, step).unlink(missing_ok=True)
        finally:
            store.close()
        self._put(conn, "pool", state.pool.to_json())
        self._put(conn, "next_step", step + 1)
        conn.execute("DELETE FROM results WHERE step = ?", (step,))
        return metrics
