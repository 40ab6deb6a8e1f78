"""A damaged run store is refused with one line before anything resumes from it."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from spade.errors import UserError
from spade.rewards import Arm
from spade.store import EnvRecord, PlayRecord, RunStore, random_state

CONFIG = {"seed": 3}


def _fill(run_dir: Path, cycles: int = 6) -> Path:
    with RunStore.open(run_dir, CONFIG) as store:
        for c in range(cycles):
            envs = [EnvRecord(env_id=f"c{c}-{k}", cycle=c, source="x = 1\n" * 300, valid=True,
                              hint="h", skill="s", doc_id=None, verdict={"valid": True})
                    for k in range(6)]
            plays = [PlayRecord(env_id=f"c{c}-{k}", cycle=c, arm=arm, index=i, seed=i,
                                ret=0.5, stop_reason="won", turns=2)
                     for k in range(6) for arm in Arm for i in range(4)]
            store.commit_cycle(c, envs, plays, {"m": c}, None,
                               {"main": random_state(random.Random(c))}, {"cycle": c})
    with sqlite3.connect(run_dir / "state.db") as conn:  # fold the log into the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return run_dir / "state.db"


def _damage_middle(db: Path) -> None:
    """Overwrite a stretch in the middle of the file, as a bad disk or a torn copy does."""
    raw = bytearray(db.read_bytes())
    page = 4096
    pages = len(raw) // page
    assert pages >= 8, pages
    for p in (pages // 2, pages // 2 + 1):  # two whole data pages in the middle
        start = p * page + 200
        raw[start:start + 600] = bytes(random.Random(p).randrange(256) for _ in range(600))
    db.write_bytes(bytes(raw))


def test_an_intact_store_resumes(tmp_path: Path) -> None:
    _fill(tmp_path)
    with RunStore.open(tmp_path, CONFIG, resume=True) as store:
        assert store.last_completed_cycle() == 5
        assert store.integrity_ok()


def test_a_store_damaged_in_the_middle_is_refused(tmp_path: Path) -> None:
    db = _fill(tmp_path)
    _damage_middle(db)
    before = db.read_bytes()
    with pytest.raises(UserError) as err:
        RunStore.open(tmp_path, CONFIG, resume=True)
    text = str(err.value)
    assert "\n" not in text
    assert str(db) in text and "--new-run" in text
    assert db.read_bytes() == before  # nothing appended to it
    # the directory is not locked afterwards: a fresh run can be made beside it
    with RunStore.open(tmp_path / "fresh", CONFIG):
        pass
