"""The exported environment pool: ``RUN_DIR/envs/<env_id>.py`` + ``.json``, and ``envs.jsonl``.

Derived from the run store (never appended to directly), so a killed and resumed run
exports exactly what an uninterrupted one does. A run with a frozen designer thereby
produces a static pool, which :func:`load_pool` reads back (the fixed-environment
baseline trains on it).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.store import EnvRecord, RunStore
from spade.textfile import atomic_write_text, iter_jsonl

POOL_DIR = "envs"
INDEX = "envs.jsonl"


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    atomic_write_text(path, text)


def metadata(record: EnvRecord) -> dict[str, Any]:
    """The metadata record of one valid environment (no timings: identical on resume)."""
    extra = record.extra
    return {
        "env_id": record.env_id,
        "file": f"{record.env_id}.py",
        "sha256": hashlib.sha256(record.source.encode()).hexdigest(),
        "cycle": record.cycle,
        "class_name": extra.get("class_name"),
        "kind": extra.get("kind"),
        "skill": record.skill,
        "doc_id": record.doc_id,
        "hint": record.hint,
        "solve_rate_hinted": record.solve_rate_hinted,
        "solve_rate_unhinted": record.solve_rate_unhinted,
        "regret": record.regret,
        "designer_reward": record.designer_reward,
        "verdict": extra.get("summary"),
    }


def export_pool(store: RunStore, run_dir: str | os.PathLike[str]) -> Path:
    """Write every valid environment of the store under ``RUN_DIR/envs``; returns that dir."""
    out = Path(run_dir) / POOL_DIR
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for record in store.environments(valid=True):
        meta = metadata(record)
        _write_if_changed(out / meta["file"], record.source)
        _write_if_changed(out / f"{record.env_id}.json", json.dumps(meta, indent=1) + "\n")
        lines.append(json.dumps(meta, separators=(",", ":")))
    _write_if_changed(out / INDEX, "".join(line + "\n" for line in lines))
    return out


@dataclass(frozen=True)
class ExportedEnv:
    """One environment of an exported pool."""

    env_id: str
    source: str
    hint: str
    skill: str | None
    kind: str | None
    metadata: dict[str, Any]


def load_pool(path: str | os.PathLike[str]) -> list[ExportedEnv]:
    """Read an exported pool (a run dir or its ``envs`` dir); checks every file's sha256."""
    root = Path(path)
    folder = root / POOL_DIR if (root / POOL_DIR / INDEX).is_file() else root
    index = folder / INDEX
    if not index.is_file():
        raise UserError(f"no environment pool at {root} (missing {POOL_DIR}/{INDEX})")
    pool = []
    for n, meta in iter_jsonl(index, "pool index"):
        try:
            source = (folder / meta["file"]).read_text(encoding="utf-8")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{index}:{n}: unreadable pool entry ({exc})") from None
        if hashlib.sha256(source.encode()).hexdigest() != meta.get("sha256"):
            raise UserError(f"{folder / meta['file']} does not match its recorded sha256")
        pool.append(ExportedEnv(meta["env_id"], source, meta.get("hint") or "", meta.get("skill"),
                            meta.get("kind"), meta))
    return pool
