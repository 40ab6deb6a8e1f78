"""Read a run directory and write its inspect logs (one per suite)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spade.eval._runs import RESULTS_FILE, SAMPLES_DIR, load_run
from spade.eval.inspect_export._log import build_log
from spade.eval.inspect_export._prompts import PromptSource, prompt_source

from spade.errors import UserError
from spade.textfile import iter_jsonl

DEFAULT_SUBDIR = "inspect"
RUN_FILE = "run.json"


@dataclass(frozen=True)
class ExportResult:
    """Where the logs went and how many samples each holds."""

    out: Path
    logs: Mapping[str, Path]
    samples: Mapping[str, int]
    prompts: Mapping[str, str]  # per suite: "ok" or why prompts are not shown

    def to_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "logs": {s: str(p) for s, p in self.logs.items()},
            "samples": dict(self.samples),
            "prompts": dict(self.prompts),
        }


def read_records(path: Path) -> list[dict[str, Any]]:
    """Sample records as the runner keeps them (first of each (id, sample); torn tail skipped).

    Read-only: unlike the store's loader this never repairs the file, so exporting a run
    that is still being written cannot damage it.
    """
    if not path.is_file():
        return []
    seen: set[tuple[str, int]] = set()
    out = []
    for _, rec in iter_jsonl(path, "samples file", skip_invalid=True):
        if not isinstance(rec, dict) or "id" not in rec or "score" not in rec:
            continue
        key = (str(rec["id"]), int(rec.get("sample", 0)))
        if key not in seen:
            seen.add(key)
            out.append(rec)
    return out


def _file_name(created: str, suite: str, task_id: str) -> str:
    """inspect's own pattern ``<timestamp>_<task>_<task id>.eval`` (``_`` separates fields)."""
    try:
        stamp = datetime.fromisoformat(created).astimezone(UTC)
    except ValueError:
        stamp = datetime.now(UTC)
    task = suite.replace("_", "-")
    return f"{stamp:%Y-%m-%dT%H-%M-%S}+00-00_{task}_{task_id}.eval"


def export_run(
    run_dir: str | Path, out: str | Path | None = None, *, suites: list[str] | None = None
) -> ExportResult:
    """Write ``<out>/<created>_<suite>_<id>.eval`` for every suite of the run."""
    try:
        from inspect_ai.log import write_eval_log
    except ImportError as exc:
        raise UserError(f"inspect-ai is not installed ({exc}); install the eval extra") from exc

    run = load_run(run_dir)  # validates the directory, with one-line errors
    root = run.path
    doc = json.loads((root / RESULTS_FILE).read_text(encoding="utf-8"))
    args: dict[str, Any] = {}
    if (root / RUN_FILE).is_file():
        args = dict(json.loads((root / RUN_FILE).read_text(encoding="utf-8")).get("args") or {})
    chosen = list(run.suites) if suites is None else suites
    unknown = [s for s in chosen if s not in run.suites]
    if unknown:
        raise UserError(f"{root}: no suite(s) {', '.join(unknown)} in this run")
    target = Path(out) if out is not None else root / DEFAULT_SUBDIR
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write inspect logs to {target}: {exc.strerror or exc}") from None
    logs, counts, prompt_state = {}, {}, {}
    for suite in chosen:
        records = read_records(root / SAMPLES_DIR / f"{suite}.jsonl")
        source = (
            prompt_source(suite, args) if records else PromptSource(suite, problem="no samples")
        )
        try:
            log = build_log(doc, args, suite, records, source)
        finally:
            source.close()
        path = target / _file_name(log.eval.created, suite, log.eval.task_id)
        for old in target.glob(f"*_{suite.replace('_', '-')}_*.eval"):
            if old != path:
                old.unlink()
        try:
            write_eval_log(log, str(path), format="eval")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
        logs[suite], counts[suite] = path, len(records)
        prompt_state[suite] = source.problem or "ok"
    return ExportResult(target, logs, counts, prompt_state)
