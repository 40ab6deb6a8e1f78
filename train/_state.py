"""Training run state in the run store (``RUN_DIR/state.db``), one committed unit per step.

Each completed step commits, in one transaction: the environments designed in it (plus the
bundled generation-0 pool on step 0), every play (designer matched plays and agent plays),
the memory, the corpus cursor, the run RNG, the current pool, and the step's metrics. The
store's "cycle" is the training step. A checkpoint carries a copy of the store as of its
step, so resuming from it restores the exact run state the weights were trained with.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.train._pool import EnvPool, initial_pool, pool_records, starter_memory
from spade.train._rollout import RolloutState, TicketResult, replace_cycle
from spade.train.recipe import TrainRecipe

from spade.corpus import CorpusSampler, SamplerState, load_corpus
from spade.cycle import CycleState, fresh_state
from spade.memory import Memory
from spade.store import DB_NAME, PlayRecord, RunStore, random_state, restore_random
from spade.store._records import EnvRecord
from spade.textfile import atomic_copy

__all__ = ["SNAPSHOT", "TrainStore"]

#: The run-store copy inside each checkpoint directory.
SNAPSHOT = "run_state.db"


def _records(step: int, results: Sequence[TicketResult], first: EnvPool | None
             ) -> tuple[list[EnvRecord], list[PlayRecord]]:
    envs: list[EnvRecord] = pool_records(first, step) if first is not None else []
    plays: list[PlayRecord] = []
    for r in results:
        if r.cycle is not None:
            tag = {"designer_ticket": r.ticket.id, "designer_ordinal": r.ticket.ordinal}
            envs += [replace_cycle(e, step, **tag) for e in r.cycle.env_records]
            plays += [replace_cycle(p, step, **tag) for p in r.cycle.play_records]
        if not r.trajectories:
            continue
        for j, (t, s) in enumerate(zip(r.trajectories, r.samples, strict=True)):
            plays.append(PlayRecord(
                env_id=t.env_id, cycle=step, arm=t.arm, index=r.ticket.index * 1000 + j,
                seed=t.seed, ret=t.total_return, stop_reason=str(t.stop_reason),
                turns=t.num_turns,
                extra={"ticket": r.ticket.id, "won": t.won, "advantage": round(s.advantage, 6),
                       "agent_tokens": t.agent_tokens, "env_fault": t.env_fault}))
    return envs, plays


class TrainStore:
    """The run store of a training run (open with :meth:`open`, close when done)."""

    def __init__(self, store: RunStore, recipe: TrainRecipe) -> None:
        self.store = store
        self.recipe = recipe

    @classmethod
    def open(cls, run_dir: Path, recipe: TrainRecipe, *, resume: bool,
             identity: dict[str, Any] | None = None) -> TrainStore:
        """``identity`` (default: the recipe's) binds the directory to this run."""
        ident = recipe.identity() if identity is None else identity
        return cls(RunStore.open(run_dir, ident, resume=resume, keep_snapshots=2), recipe)

    def close(self) -> None:
        self.store.close()

    @property
    def run_dir(self) -> Path:
        return self.store.path.parent

    def last_step(self) -> int | None:
        return self.store.last_completed_cycle()

    def load(self, initial: EnvPool | None = None) -> tuple[RolloutState, int]:
        """The state after the last committed step, and the next step. Before step 0: a
        fresh state whose pool is ``initial`` (default: the recipe's generation 0)."""
        cfg = self.recipe.selfplay
        corpus = (load_corpus(cfg.corpus.path or cfg.designer.setting)
                  if cfg.designer.use_corpus else None)
        saved = self.store.load_state()
        if saved is None:
            pool = initial or initial_pool(cfg.designer.setting, self.recipe.pool.examples,
                                           min_designed=self.recipe.pool.min_designed)
            fresh = fresh_state(cfg, corpus)
            if self.recipe.pool.examples_in_memory:
                for entry in starter_memory(self.recipe.pool.examples):
                    fresh.memory.add(entry)
            return RolloutState(fresh, pool), 0
        sampler = None
        if corpus is not None and saved.sampler is not None:
            sampler = CorpusSampler.restore(corpus, SamplerState.from_json(saved.sampler))
        cycle = CycleState(Memory.from_dict(saved.memory), sampler,
                           restore_random(saved.rng["run"]))
        return RolloutState(cycle, EnvPool.from_json(saved.env_pool)), saved.cycle + 1

    def commit(self, step: int, state: RolloutState, results: Sequence[TicketResult],
               metrics: dict[str, Any], first_pool: EnvPool | None) -> None:
        envs, plays = _records(step, results, first_pool if step == 0 else None)
        c = state.cycle
        self.store.commit_cycle(
            step, envs, plays, c.memory.to_dict(),
            c.sampler.state.to_json() if c.sampler else None,
            {"run": random_state(c.rng)}, metrics, env_pool=state.pool.to_json())

    def metrics(self) -> list[dict[str, Any]]:
        return [m for _, m in self.store.metrics()]

    def write_metrics(self) -> Path:
        return self.store.write_metrics_jsonl(self.run_dir / "metrics.jsonl")

    def snapshot(self, target: Path) -> None:
        """A consistent copy of the store (SQLite online backup) at ``target``."""
        dst = sqlite3.connect(target)
        try:
            self.store._conn.backup(dst)
        finally:
            dst.close()


def restore_snapshot(run_dir: Path, checkpoint: Path) -> None:
    """Put a checkpoint's run-store copy back as ``RUN_DIR/state.db`` (steps after the
    checkpoint are discarded: the resumed run recomputes them)."""
    source = checkpoint / SNAPSHOT
    if not source.is_file():
        raise FileNotFoundError(f"{checkpoint} has no {SNAPSHOT}")
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(run_dir / f"{DB_NAME}{suffix}")
    atomic_copy(source, run_dir / DB_NAME)
