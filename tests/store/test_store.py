"""Run store: round trip, identity checks, atomic cycles, RNG states."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from spade.errors import UserError
from spade.rewards import Arm
from spade.store import (
    EnvRecord,
    PlayRecord,
    RunStore,
    config_fingerprint,
    numpy_state,
    random_state,
    restore_numpy,
    restore_random,
)

CONFIG = {"seed": 1, "reward": {"variant": "regret", "invalid_penalty": -1.0}}


def _env(cycle: int, k: int, **kw: object) -> EnvRecord:
    return EnvRecord(env_id=f"c{cycle}-{k}", cycle=cycle, source=f"# env {k}\n", valid=True,
                     hint="h", skill="math", doc_id="games:3", verdict={"valid": True},
                     solve_rate_hinted=0.5, solve_rate_unhinted=0.25, regret=0.25,
                     designer_reward=0.25, **kw)  # type: ignore[arg-type]


def _play(cycle: int, k: int, arm: Arm, i: int) -> PlayRecord:
    return PlayRecord(env_id=f"c{cycle}-{k}", cycle=cycle, arm=arm, index=i, seed=i,
                      ret=0.5, stop_reason="won", turns=3, extra={"tokens": 10})


def _commit(store: RunStore, cycle: int, n_env: int = 2) -> None:
    envs = [_env(cycle, k) for k in range(n_env)]
    plays = [_play(cycle, k, arm, i) for k in range(n_env) for arm in Arm for i in range(2)]
    store.commit_cycle(cycle, envs, plays, {"entries": [cycle]}, {"position": cycle},
                       {"main": random_state(random.Random(cycle))}, {"cycle": cycle, "x": 1.5})


def test_round_trip(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, CONFIG) as store:
        assert store.last_completed_cycle() is None and store.load_state() is None
        _commit(store, 0)
        _commit(store, 1, n_env=3)
        assert store.last_completed_cycle() == 1 and store.completed_cycles() == [0, 1]
        envs = store.environments(cycle=1)
        assert [e.env_id for e in envs] == ["c1-0", "c1-1", "c1-2"]
        assert envs[0] == _env(1, 0) and envs[0].verdict == {"valid": True}
        assert len(store.environments(valid=True)) == 5 and store.environments(valid=False) == []
        plays = store.plays(env_id="c1-2")
        assert [(p.arm, p.index) for p in plays] == [(Arm.HINTED, 0), (Arm.HINTED, 1),
                                                    (Arm.UNHINTED, 0), (Arm.UNHINTED, 1)]
        assert plays[0] == _play(1, 2, Arm.HINTED, 0)
        assert store.metrics() == [(0, {"cycle": 0, "x": 1.5}), (1, {"cycle": 1, "x": 1.5})]
        state = store.load_state()
        assert state is not None and state.cycle == 1 and state.memory == {"entries": [1]}
        assert state.sampler == {"position": 1} and state.metrics["cycle"] == 1
        assert restore_random(state.rng["main"]).random() == random.Random(1).random()
        out = store.write_metrics_jsonl(tmp_path / "metrics.jsonl")
        assert [json.loads(line)["cycle"] for line in out.read_text().splitlines()] == [0, 1]
        assert store.integrity_ok() and store.config() == CONFIG


def test_identity_checks(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, CONFIG) as store:
        _commit(store, 0)
    other = {"seed": 2, "reward": {"variant": "blend", "invalid_penalty": -1.0}}
    with pytest.raises(UserError, match=r"different config \(differs in: reward.variant, seed\)"):
        RunStore.open(tmp_path, other, resume=True)
    with pytest.raises(UserError, match="resume it"):
        RunStore.open(tmp_path, CONFIG)
    with RunStore.open(tmp_path, dict(reversed(CONFIG.items())), resume=True) as store:
        assert store.last_completed_cycle() == 0  # key order does not matter
        with pytest.raises(UserError, match="in use"):
            RunStore.open(tmp_path, CONFIG, resume=True)
    # a directory without completed cycles may be reopened without --resume
    with RunStore.open(tmp_path / "fresh", CONFIG):
        pass
    with RunStore.open(tmp_path / "fresh", CONFIG):
        pass
    assert config_fingerprint({"a": 1, "b": 2}) == config_fingerprint({"b": 2, "a": 1})


def test_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "state.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(UserError, match="not a usable run store"):
        RunStore.open(tmp_path, CONFIG)


def test_failed_commit_writes_nothing(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, CONFIG) as store:
        _commit(store, 0)
        dup = [_env(1, 0), _env(1, 0)]
        with pytest.raises(ValueError, match="clash"):
            store.commit_cycle(1, dup, [], {}, {}, {}, {"cycle": 1})
        with pytest.raises(ValueError, match="finite"):
            store.commit_cycle(1, [_env(1, 0)], [], {}, {}, {}, {"bad": math.nan})
        with pytest.raises(ValueError, match="not after"):
            store.commit_cycle(0, [], [], {}, {}, {}, {})
        with pytest.raises(ValueError, match="belongs to cycle 2"):
            store.commit_cycle(1, [_env(2, 0)], [], {}, {}, {}, {})
        assert store.last_completed_cycle() == 0
        assert store.environments(cycle=1) == [] and store.metrics() == [(0, {"cycle": 0,
                                                                              "x": 1.5})]
        _commit(store, 1)  # the same cycle commits fine afterwards
        assert store.completed_cycles() == [0, 1]


def test_snapshots_pruned_but_state_kept(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, CONFIG, keep_snapshots=2) as store:
        for cycle in range(5):
            _commit(store, cycle, n_env=1)
        kept = store._conn.execute("SELECT DISTINCT cycle FROM snapshots ORDER BY 1").fetchall()
        assert [c for (c,) in kept] == [3, 4]
        state = store.load_state()
        assert state is not None and state.memory == {"entries": [4]}
        assert len(store.environments()) == 5 and len(store.metrics()) == 5


def test_numpy_and_random_states_json_round_trip() -> None:
    gen = np.random.default_rng(5)
    gen.random(3)
    saved = json.loads(json.dumps(numpy_state(gen)))
    assert np.array_equal(restore_numpy(saved).random(4), gen.random(4))
    rng = random.Random(9)
    rng.gauss(0, 1)
    saved = json.loads(json.dumps(random_state(rng)))
    again = restore_random(saved)
    assert [again.gauss(0, 1) for _ in range(3)] == [rng.gauss(0, 1) for _ in range(3)]
    with pytest.raises(UserError):
        restore_random({"kind": "numpy"})
    with pytest.raises(UserError):
        restore_numpy({"state": {"bit_generator": "Nope"}})
