"""Writes deterministic cycles into a run store; used by the crash tests as a subprocess.

usage: _writer.py RUN_DIR N_CYCLES PAYLOAD_BYTES [DIE_AT_CYCLE]

Each cycle's content is drawn from a ``random.Random`` whose state is stored with the cycle,
so a resumed writer produces exactly what an uninterrupted one would. With DIE_AT_CYCLE the
process SIGKILLs itself inside that cycle's transaction, just before the completion mark.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from typing import Any

from spade.rewards import Arm
from spade.store import EnvRecord, PlayRecord, RunStore, random_state, restore_random

CONFIG = {"seed": 7, "setting": "games", "designer": {"group_size": 4}}
ENVS_PER_CYCLE = 12
PLAYS_PER_ARM = 8


class _DieBeforeMark:
    """Connection proxy that kills the process right before the cycle is marked complete."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.startswith("INSERT INTO cycles"):
            os.kill(os.getpid(), signal.SIGKILL)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def cycle_records(cycle: int, rng: random.Random) -> tuple[list[EnvRecord], list[PlayRecord]]:
    envs, plays = [], []
    for k in range(ENVS_PER_CYCLE):
        env_id = f"c{cycle:03d}-e{k:02d}"
        valid = rng.random() < 0.7
        envs.append(EnvRecord(
            env_id=env_id, cycle=cycle, source="x = 1\n" * rng.randint(5, 200), valid=valid,
            hint="think", skill=rng.choice(["math", "logic"]), doc_id=f"games:{k}",
            verdict={"valid": valid, "stage": "done" if valid else "types"},
            regret=rng.random() if valid else None, extra={"k": k},
        ))
        if valid:
            for arm in Arm:
                for i in range(PLAYS_PER_ARM):
                    plays.append(PlayRecord(
                        env_id=env_id, cycle=cycle, arm=arm, index=i, seed=1000 * cycle + i,
                        ret=rng.random(), stop_reason=rng.choice(["won", "max_turns"]),
                        turns=rng.randint(1, 25),
                    ))
    return envs, plays


def main(argv: list[str]) -> int:
    run_dir, n_cycles, payload = argv[0], int(argv[1]), int(argv[2])
    die_at = int(argv[3]) if len(argv) > 3 else None
    store = RunStore.open(run_dir, CONFIG, resume=True, keep_snapshots=2)
    state = store.load_state()
    if state is None:
        rng, memory, start = random.Random(7), [], 0
    else:
        rng, memory, start = restore_random(state.rng["main"]), state.memory["ids"], state.cycle + 1
    for cycle in range(start, n_cycles):
        envs, plays = cycle_records(cycle, rng)
        memory = (memory + [e.env_id for e in envs if e.valid])[-50:]
        metrics = {"cycle": cycle, "n_valid": sum(e.valid for e in envs),
                   "mean_return": sum(p.ret for p in plays) / max(1, len(plays))}
        if cycle == die_at:
            store._conn = _DieBeforeMark(store._conn)  # type: ignore[assignment]
        store.commit_cycle(cycle, envs, plays, {"ids": memory, "pad": "y" * payload},
                           {"position": 4 * (cycle + 1)}, {"main": random_state(rng)}, metrics)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
