"""The run store: the crash-safe state of a self-play run.

    store = RunStore.open(run_dir, config_dict, resume=args.resume)
    state = store.load_state()          # None on a fresh run, else the last completed cycle
    ...
    store.commit_cycle(cycle, env_records, play_records, memory.to_dict(),
                       sampler.state.to_json(), {"cycle": random_state(rng)}, metrics)
    store.write_metrics_jsonl(run_dir / "metrics.jsonl")
"""

from __future__ import annotations

from spade.store._records import EnvRecord, PlayRecord, RunState
from spade.store._rng import numpy_state, random_state, restore_numpy, restore_random
from spade.store._store import DB_NAME, SCHEMA_VERSION, RunStore, config_fingerprint

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "EnvRecord",
    "PlayRecord",
    "RunState",
    "RunStore",
    "config_fingerprint",
    "numpy_state",
    "random_state",
    "restore_numpy",
    "restore_random",
]
