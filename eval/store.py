"""One run directory per evaluation, written so a killed run can resume.

Layout (the evaluation results contract)::

    OUT/run.json              the arguments that define the run (checked on resume)
    OUT/results.json          written atomically after each suite; "finished" at the end
    OUT/samples/<suite>.jsonl one JSON object per (item, sample), append-only

Each batch of sample records is appended and fsync'd before the next batch is generated.
A rerun with the same arguments reads the records back (a torn last line from a kill is
cut off), keeps the first record of each (id, sample), and only generates what is missing;
a rerun with different arguments into the same directory is refused, and so is one whose
model (sha256 of weights, config, tokenizer, chat template; a replay file's sha256) or any
suite's data files changed since the run began: ``run.json`` keeps them under
``identity`` (see :meth:`RunStore.bind`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.rundir import START_OVER
from spade.textfile import (
    append_jsonl,
    atomic_write_text,
    drop_torn_tail,
    iter_jsonl,
    partial_write_of,
)

RUN_FILE = "run.json"
RESULTS_FILE = "results.json"
SAMPLES_DIR = "samples"

SampleKey = tuple[str, int]


def _corrupt(message: str) -> UserError:
    """A damaged samples file, with how to go on."""
    return UserError(f"{message}; fix or delete that line, or {START_OVER}")


class EvalStore:
    """Reads and appends the files of one run directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def open(self, args: Mapping[str, Any]) -> bool:
        """Create the directory or check it holds the same run; True when resuming."""
        run_file = self.root / RUN_FILE
        if run_file.is_file():
            try:
                old = json.loads(run_file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise UserError(f"{run_file} is not valid JSON ({exc})") from exc
            if old.get("args") != json.loads(json.dumps(args)):
                diff = sorted(
                    k for k in set(old.get("args", {})) | set(args)
                    if old.get("args", {}).get(k) != json.loads(json.dumps(args.get(k)))
                )
                raise UserError(
                    f"{self.root} holds a run with different arguments ({', '.join(diff)}); "
                    f"rerun with the same arguments to resume, or {START_OVER}"
                )
            return True
        # A run killed while starting may have left only these (an empty samples/ folder,
        # a half-written run.json): starting it again is safe.
        if self.root.exists() and any(
                (p.name != SAMPLES_DIR and partial_write_of(p.name) != RUN_FILE)
                or (p.is_dir() and any(p.iterdir()))
                for p in self.root.iterdir()):
            raise UserError(f"{self.root} exists and is not an evaluation run directory")
        (self.root / SAMPLES_DIR).mkdir(parents=True, exist_ok=True)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        doc = {"args": args, "created": created}
        atomic_write_text(run_file, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return False

    def bind(self, key: str, value: Any, describe: Callable[[Any, Any], str]) -> None:
        """Record identity part ``key`` (``model``, ``data/<suite>``) the first time; later
        refuse, in one line naming the change, a value that differs."""
        run_file = self.root / RUN_FILE
        doc = json.loads(run_file.read_text(encoding="utf-8"))
        identity = doc.setdefault("identity", {})
        value = json.loads(json.dumps(value))
        if key in identity:
            if identity[key] != value:
                what = describe(identity[key], value)
                raise UserError(
                    f"{self.root} holds a run made with a different {what}; results of the "
                    f"two would mix. To start over, {START_OVER}"
                )
            return
        identity[key] = value
        atomic_write_text(run_file, json.dumps(doc, indent=2, sort_keys=True) + "\n")

    def samples_from(self, suite: str, twin: str | None = None) -> str | None:
        """The run whose ``suite`` samples this one took over (:mod:`spade.eval._twin`),
        recorded in run.json when ``twin`` is given, so a resume still names it."""
        run_file = self.root / RUN_FILE
        doc = json.loads(run_file.read_text(encoding="utf-8"))
        sources = doc.setdefault("samples_from", {})
        if twin is not None:
            sources[suite] = twin
            atomic_write_text(run_file, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        found = sources.get(suite)
        return str(found) if found is not None else None

    def code_versions(self, current: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every code version that has run on this directory, oldest first: a resume under
        other code appends ``current``, so a result whose samples two versions made says so.
        A run made before the list was kept starts it from its ``results.json``."""
        run_file = self.root / RUN_FILE
        doc = json.loads(run_file.read_text(encoding="utf-8"))
        versions = doc.get("code_versions")
        if versions is None:
            results = self.root / "results.json"
            old = None
            if results.is_file():
                with contextlib.suppress(json.JSONDecodeError, OSError):
                    old = json.loads(results.read_text(encoding="utf-8")).get("code_version")
            versions = [old] if isinstance(old, dict) else []
        current = json.loads(json.dumps(current))
        if not versions or versions[-1] != current:
            versions.append(current)
            doc["code_versions"] = versions
            atomic_write_text(run_file, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return list(versions)

    def created(self) -> str | None:
        """When the run was first started (kept across resumes)."""
        run_file = self.root / RUN_FILE
        if not run_file.is_file():
            return None
        return json.loads(run_file.read_text(encoding="utf-8")).get("created")

    def samples_path(self, suite: str) -> Path:
        return self.root / SAMPLES_DIR / f"{suite}.jsonl"

    def load_samples(self, suite: str) -> dict[SampleKey, dict[str, Any]]:
        """Finished records by (id, sample); repairs a torn tail so appends stay line-aligned."""
        path = self.samples_path(suite)
        if not path.is_file():
            return {}
        drop_torn_tail(path)
        out: dict[SampleKey, dict[str, Any]] = {}
        for lineno, rec in iter_jsonl(path, "samples file", error=_corrupt):
            try:
                key = (str(rec["id"]), int(rec["sample"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise _corrupt(f"{path}:{lineno}: corrupt sample record "
                               f"({type(exc).__name__}: {exc})") from None
            out.setdefault(key, rec)
        return out

    def append(self, suite: str, records: Iterable[Mapping[str, Any]]) -> None:
        path = self.samples_path(suite)
        path.parent.mkdir(parents=True, exist_ok=True)
        append_jsonl(path, records, ensure_ascii=False)

    def write_results(self, results: Mapping[str, Any]) -> Path:
        path = self.root / RESULTS_FILE
        atomic_write_text(path, json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        return path
