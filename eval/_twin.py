"""Samples a model with the same identity already produced: taken over, not generated again.

A checkpoint whose weights never moved (a baseline none of whose GRPO groups had a
gradient) has the same identity as the model it started from: the sha256 of its weights,
config, tokenizer and chat template. What a run writes is a function of that identity, the
run's arguments, the suite's data files and the code, so a finished run that agrees on all
four holds the samples this run would generate, item by item and seed by seed. Taking them
over is a resume from another directory: every record is still checked against this run's
prompts, the suite entry names where the samples came from (``samples_from``), and a run
whose code is not a clean commit never takes any (its code cannot be told equal).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.eval.store import RESULTS_FILE, RUN_FILE, EvalStore

from spade.identity import SCOPE

__all__ = ["Twins", "find_twin", "take_over"]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _clean(version: Mapping[str, Any]) -> bool:
    return bool(version.get("git_commit")) and version.get("git_dirty") is False


def _agrees(twin: Path, ours: Mapping[str, Any], suite: str, code: Mapping[str, Any]) -> bool:
    """True when the finished run in ``twin`` was made by the same model identity, with the
    same arguments but the model's name, on the same data files, by this same clean code."""
    run, results = _read(twin / RUN_FILE), _read(twin / RESULTS_FILE)
    if run is None or results is None or not results.get("finished"):
        return False
    entry = (results.get("suites") or {}).get(suite) or {}
    if entry.get("status") != "ok" or entry.get("samples_from"):
        return False  # take from the run that generated them, not from a copy
    args, mine = dict(run.get("args") or {}), dict(ours["args"])
    args.pop("model", None)
    mine.pop("model", None)
    identity, model = run.get("identity") or {}, ours["model"]
    return (args == mine
            and (identity.get("model") or {}).get("sha256") == model.get("sha256")
            and identity.get(f"data/{suite}") == ours["data"]
            and run.get("code_versions") == [dict(code)])


def find_twin(candidates: Sequence[Path], ours: Mapping[str, Any], suite: str,
              code: Mapping[str, Any]) -> Path | None:
    """The first of ``candidates`` whose ``suite`` samples this run may take over.

    ``ours``: this run's ``args`` (run.json), ``model`` (its bound identity) and ``data``
    (the suite's bound data files). Only local models hashed over all of ``SCOPE`` qualify
    (a server or replay file has no weights to compare)."""
    model = ours["model"]
    if (not model.get("sha256") or model.get("sha256_scope") != SCOPE or not _clean(code)):
        return None
    for twin in candidates:
        if _agrees(Path(twin), ours, suite, code):
            return Path(twin)
    return None


def take_over(store: EvalStore, suite: str, twin: Path) -> int:
    """Append the twin's ``suite`` records to ``store`` (empty for that suite); returns
    how many. The runner then resumes over them and generates nothing it already has."""
    records = list(EvalStore(twin).load_samples(suite).values())
    store.samples_from(suite, str(twin))
    store.append(suite, records)
    return len(records)


@dataclass(frozen=True)
class Twins:
    """A run's candidate twins and what must agree with them."""

    runs: tuple[Path, ...]
    model: Mapping[str, Any]  # this run's bound model identity
    code: Mapping[str, Any]  # empty: this run's code changed since it began, take none

    def take(self, store: EvalStore, suite: str, note: Callable[[str], None]) -> str | None:
        """Take ``suite``'s samples over from a twin when the run has none of its own;
        returns the twin's folder."""
        if not self.runs or not self.code or store.load_samples(suite):
            return None
        doc = _read(store.root / RUN_FILE) or {}
        ours = {"args": doc.get("args") or {}, "model": self.model,
                "data": (doc.get("identity") or {}).get(f"data/{suite}")}
        twin = find_twin(self.runs, ours, suite, self.code)
        if twin is None:
            return None
        n = take_over(store, suite, twin)
        note(f"[{suite}] the same model (sha256 {str(self.model['sha256'])[:12]}) was scored "
             f"in {twin}: its {n} samples taken over, none generated")
        return str(twin)
