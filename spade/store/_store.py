"""The run store: one SQLite file (WAL mode) per run directory, ``RUN_DIR/state.db``.

Crash safety: everything a cycle produces — new environments, plays, the memory, the
corpus sampler and RNG states, the environment pool a trainer plays, the metrics, and the
row in ``cycles`` that marks the cycle complete — is written by
:meth:`RunStore.commit_cycle` in ONE transaction. SQLite's write-ahead log makes that
transaction atomic on disk (``synchronous=FULL``), so a SIGKILL at any moment leaves
either the previous completed state or the new one, never a mix; resuming continues from
:meth:`RunStore.load_state`.

Identity: the store records a fingerprint (sha256 of the canonical JSON) of the run config
it was created with, and refuses, with a ``UserError``, to open for a different config.
Pass only the settings that determine the results (leave out e.g. the number of cycles to
run, which a resumed run may extend). An exclusive lock file keeps two processes from
writing the same run directory at once.

State blobs (memory, sampler, RNG, environment pool) are kept for the last
``keep_snapshots`` cycles.

Schema 1 kept a trainer's environment pool inside the RNG blob (``{"run": ..., "pool":
...}``); opening such a store moves it to its own ``env_pool`` blob (schema 2), in one
transaction, so old runs still open and resume.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from spade.errors import UserError
from spade.rewards import Arm
from spade.rundir import START_OVER
from spade.store._records import EnvRecord, PlayRecord, RunState
from spade.textfile import write_jsonl

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

DB_NAME = "state.db"
SCHEMA_VERSION = 2
_SNAPSHOT_KINDS = ("memory", "sampler", "rng", "env_pool")
#: Kinds every completed cycle has (a self-play run has no environment pool).
_REQUIRED_KINDS = frozenset(("memory", "sampler", "rng"))

_SCHEMA = """
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


def _dumps(value: Any, *, sort: bool = False) -> str:
    try:
        return json.dumps(value, sort_keys=sort, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"run store values must be finite plain JSON: {exc}") from None


def config_fingerprint(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical (sorted, compact) JSON of a config mapping."""
    return hashlib.sha256(_dumps(dict(config), sort=True).encode()).hexdigest()


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            out += _differences(old.get(key), new.get(key), path) if key in old and key in new \
                else [path]
        return out
    return [] if old == new else [prefix or "<root>"]


def _check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged store before anything resumes from it or appends to it: SQLite's
    own check reads every page, so bytes damaged anywhere in the file are found (a
    crash never causes this: the write-ahead log keeps commits atomic; a disk or a copy
    does)."""
    rows = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
    if rows != ["ok"]:
        conn.close()
        first = " ".join(str(rows[0]).split()) if rows else "no answer"
        raise UserError(f"{path} is damaged (SQLite integrity check: {first[:120]}); "
                        f"it cannot be resumed: {START_OVER}")


class RunStore:
    """Open with :meth:`open`; close with :meth:`close` or a ``with`` block."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock: Any,
                 keep_snapshots: int | None) -> None:
        self.path = path
        self._conn = conn
        self._lock = lock
        self.keep_snapshots = keep_snapshots

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        run_dir: str | os.PathLike[str],
        config: Mapping[str, Any],
        *,
        resume: bool = False,
        keep_snapshots: int | None = 3,
    ) -> RunStore:
        """Create ``RUN_DIR/state.db`` or reopen it.

        A new store is created when none exists (also with ``resume``: nothing to resume
        yet). An existing one must have the same config fingerprint, and if it already has
        completed cycles, ``resume`` must be set; otherwise a ``UserError`` explains.
        """
        if keep_snapshots is not None and keep_snapshots < 1:
            raise ValueError("keep_snapshots must be >= 1 or None")
        directory = Path(run_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create run directory {directory}: {exc}") from None
        lock = cls._acquire_lock(directory)
        path = directory / DB_NAME
        existed = path.is_file() and path.stat().st_size > 0
        try:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
            if existed:
                _check_integrity(conn, path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            store = cls(path, conn, lock, keep_snapshots)
            store._initialise(dict(config), resume=resume)
        except sqlite3.DatabaseError as exc:
            lock.close()
            raise UserError(f"{path} is not a usable run store ({exc}); {START_OVER}") \
                from None
        except BaseException:
            lock.close()
            raise
        return store

    @staticmethod
    def _acquire_lock(directory: Path) -> Any:
        handle = (directory / ".state.lock").open("a+")
        if fcntl is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise UserError(f"run directory {directory} is in use by another process") \
                    from None
        return handle

    def _initialise(self, config: dict[str, Any], *, resume: bool) -> None:
        fingerprint = config_fingerprint(config)
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if not has_meta:
            with self._transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("fingerprint", fingerprint),
                     ("config", _dumps(config, sort=True)),
                     ("created", datetime.now(UTC).isoformat(timespec="seconds"))],
                )
            return
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") not in ("1", str(SCHEMA_VERSION)):
            raise UserError(
                f"{self.path} has run-store schema {meta.get('schema_version')}, "
                f"this version reads {SCHEMA_VERSION}"
            )
        if meta.get("fingerprint") != fingerprint:
            changed = _differences(json.loads(meta.get("config", "{}")), config)
            shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
            raise UserError(
                f"run directory {self.path.parent} was created with a different config "
                f"(differs in: {shown or 'unknown'}); {START_OVER}"
            )
        last = self.last_completed_cycle()
        if last is not None and not resume:
            raise UserError(
                f"run directory {self.path.parent} already holds completed cycles up to "
                f"{last}; resume it, or {START_OVER}"
            )
        if meta.get("schema_version") == "1":
            self._migrate_from_1()

    def _migrate_from_1(self) -> None:
        """Schema 1 -> 2: a trainer's pool moves out of the RNG blob into ``env_pool``."""
        with self._transaction():
            rows = self._conn.execute(
                "SELECT cycle, state FROM snapshots WHERE kind = 'rng'").fetchall()
            for cycle, text in rows:
                rng = json.loads(text)
                pool = rng.pop("pool", None) if isinstance(rng, dict) else None
                self._conn.execute("UPDATE snapshots SET state = ? WHERE cycle = ? AND "
                                   "kind = 'rng'", (_dumps(rng), cycle))
                self._conn.execute("INSERT INTO snapshots VALUES (?, 'env_pool', ?)",
                                   (cycle, _dumps(pool)))
            self._conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                               (str(SCHEMA_VERSION),))

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the database and release the directory lock (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None  # type: ignore[assignment]
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- writing -----------------------------------------------------------------------
    def commit_cycle(
        self,
        cycle: int,
        envs: Iterable[EnvRecord],
        plays: Iterable[PlayRecord],
        memory_state: Any,
        sampler_state: Any,
        rng_state: Any,
        metrics: Mapping[str, Any],
        env_pool: Any = None,
    ) -> None:
        """Write all of a cycle's results and mark it complete, atomically.

        ``cycle`` must be greater than the last completed cycle; records must belong to
        ``cycle``. States and metrics must be plain JSON (finite numbers); ``env_pool`` is
        the environment pool a trainer plays (None for a self-play run). On any error
        nothing of the cycle is written.
        """
        last = self.last_completed_cycle()
        if last is not None and cycle <= last:
            raise ValueError(f"cycle {cycle} is not after the last completed cycle {last}")
        env_rows = [self._env_row(cycle, e) for e in envs]
        play_rows = [self._play_row(cycle, p) for p in plays]
        snapshot_rows = [(cycle, kind, _dumps(state)) for kind, state in
                         zip(_SNAPSHOT_KINDS, (memory_state, sampler_state, rng_state, env_pool),
                             strict=True)]
        metrics_json = _dumps(dict(metrics))
        try:
            with self._transaction():
                self._conn.executemany(
                    "INSERT INTO environments VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", env_rows)
                self._conn.executemany(
                    "INSERT INTO plays VALUES (?,?,?,?,?,?,?,?,?)", play_rows)
                self._conn.executemany("INSERT INTO snapshots VALUES (?,?,?)", snapshot_rows)
                self._conn.execute("INSERT INTO metrics VALUES (?, ?)", (cycle, metrics_json))
                if self.keep_snapshots is not None:
                    self._conn.execute(
                        "DELETE FROM snapshots WHERE cycle NOT IN (SELECT cycle FROM cycles "
                        "UNION SELECT ? ORDER BY 1 DESC LIMIT ?)", (cycle, self.keep_snapshots))
                self._conn.execute(
                    "INSERT INTO cycles VALUES (?, ?, ?, ?)",
                    (cycle, datetime.now(UTC).isoformat(timespec="seconds"),
                     len(env_rows), len(play_rows)))
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"cycle {cycle} records clash with stored ones: {exc}") from None

    def update_metrics(self, cycle: int, extra: Mapping[str, Any]) -> None:
        """Merge ``extra`` into a completed cycle's metrics (e.g. the commit's own timing,
        which cannot be known inside the commit). Its own small transaction: a crash
        before it only loses ``extra``."""
        merged = {**self.metrics_for(cycle), **dict(extra)}
        with self._transaction():
            self._conn.execute("UPDATE metrics SET metrics = ? WHERE cycle = ?",
                               (_dumps(merged), cycle))

    @staticmethod
    def _env_row(cycle: int, e: EnvRecord) -> tuple[Any, ...]:
        if e.cycle != cycle:
            raise ValueError(f"environment {e.env_id} belongs to cycle {e.cycle}, not {cycle}")
        return (e.env_id, e.cycle, e.source, int(e.valid), e.hint, e.skill, e.doc_id,
                None if e.verdict is None else _dumps(e.verdict), e.solve_rate_hinted,
                e.solve_rate_unhinted, e.regret, e.designer_reward, _dumps(e.extra))

    @staticmethod
    def _play_row(cycle: int, p: PlayRecord) -> tuple[Any, ...]:
        if p.cycle != cycle:
            raise ValueError(f"play of {p.env_id} belongs to cycle {p.cycle}, not {cycle}")
        return (p.cycle, p.env_id, Arm(p.arm).value, p.index, p.seed, float(p.ret),
                p.stop_reason, p.turns, _dumps(p.extra))

    # -- reading -----------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """The config the run was created with."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='config'").fetchone()
        return dict(json.loads(row[0]))

    def last_completed_cycle(self) -> int | None:
        """The highest completed cycle, ``None`` before the first."""
        row = self._conn.execute("SELECT MAX(cycle) FROM cycles").fetchone()
        return None if row[0] is None else int(row[0])

    def completed_cycles(self) -> list[int]:
        return [int(r[0]) for r in self._conn.execute("SELECT cycle FROM cycles ORDER BY 1")]

    def load_state(self) -> RunState | None:
        """The state after the last completed cycle, ``None`` when there is none."""
        cycle = self.last_completed_cycle()
        if cycle is None:
            return None
        rows = dict(self._conn.execute(
            "SELECT kind, state FROM snapshots WHERE cycle = ?", (cycle,)).fetchall())
        if not set(rows) >= _REQUIRED_KINDS:
            raise UserError(f"{self.path}: state of completed cycle {cycle} is incomplete")
        return RunState(
            cycle=cycle,
            memory=json.loads(rows["memory"]),
            sampler=json.loads(rows["sampler"]),
            rng=json.loads(rows["rng"]),
            metrics=self.metrics_for(cycle),
            env_pool=json.loads(rows.get("env_pool", "null")),
        )

    def environments(self, *, cycle: int | None = None, valid: bool | None = None
                     ) -> list[EnvRecord]:
        """Stored environments in insertion order, optionally filtered."""
        sql, args = "SELECT * FROM environments WHERE 1=1", list[Any]()
        if cycle is not None:
            sql, args = sql + " AND cycle = ?", [*args, cycle]
        if valid is not None:
            sql, args = sql + " AND valid = ?", [*args, int(valid)]
        return [
            EnvRecord(env_id=r[0], cycle=r[1], source=r[2], valid=bool(r[3]), hint=r[4],
                      skill=r[5], doc_id=r[6], verdict=None if r[7] is None else json.loads(r[7]),
                      solve_rate_hinted=r[8], solve_rate_unhinted=r[9], regret=r[10],
                      designer_reward=r[11], extra=json.loads(r[12]))
            for r in self._conn.execute(sql + " ORDER BY cycle, rowid", args)
        ]

    def plays(self, *, cycle: int | None = None, env_id: str | None = None) -> list[PlayRecord]:
        """Stored plays in insertion order, optionally filtered."""
        sql, args = "SELECT * FROM plays WHERE 1=1", list[Any]()
        if cycle is not None:
            sql, args = sql + " AND cycle = ?", [*args, cycle]
        if env_id is not None:
            sql, args = sql + " AND env_id = ?", [*args, env_id]
        return [
            PlayRecord(cycle=r[0], env_id=r[1], arm=Arm(r[2]), index=r[3], seed=r[4], ret=r[5],
                       stop_reason=r[6], turns=r[7], extra=json.loads(r[8]))
            for r in self._conn.execute(sql + " ORDER BY cycle, rowid", args)
        ]

    def metrics(self) -> list[tuple[int, dict[str, Any]]]:
        """``(cycle, metrics)`` of every completed cycle, in order."""
        return [(int(c), json.loads(m)) for c, m in
                self._conn.execute("SELECT cycle, metrics FROM metrics ORDER BY cycle")]

    def metrics_for(self, cycle: int) -> dict[str, Any]:
        row = self._conn.execute("SELECT metrics FROM metrics WHERE cycle = ?",
                                 (cycle,)).fetchone()
        if row is None:
            raise KeyError(f"no metrics for cycle {cycle}")
        return dict(json.loads(row[0]))

    def write_metrics_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Rewrite ``path`` (atomically) with one JSON line per completed cycle.

        Deriving the file from the database keeps it consistent with the store even if the
        process died between a commit and a plain append.
        """
        rows = (metrics for _, metrics in self.metrics())
        return write_jsonl(path, rows, separators=(",", ":"))

    def integrity_ok(self) -> bool:
        """SQLite's own integrity check."""
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
