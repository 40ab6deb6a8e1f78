"""Read evaluation run directories (``results.json`` + ``samples/<suite>.jsonl``).

Reports and the regression gate consume runs only through this module, so the nested
result layout is parsed in one place and a directory that is not a run gives one clear
error instead of a table full of blanks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from spade.errors import UserError
from spade.textfile import iter_jsonl, read_text

#: The results.json layout this code understands.
SCHEMA_VERSION = 1
RESULTS_FILE = "results.json"
SAMPLES_DIR = "samples"
#: Suite statuses: "ok" (every item scored), "partial" (an interrupted run, scored on the
#: items it finished), "missing" (no score: data absent, empty or unreadable, or no item
#: scored before an interruption; ``missing_reason`` says which), "error".
SUITE_STATUSES = ("ok", "partial", "missing", "error")
SCORED_STATUSES = ("ok", "partial")
#: The reason given to a result written before reasons were recorded that holds no scored item.
NO_SCORED_ITEM = "no scored sample (no item finished before the run stopped)"
#: Row kinds in tables; "reference" is reserved for the paper's reported numbers.
METHOD_KINDS = ("base", "fixed_env", "spade", "ablation", "other", "reference")
#: z for a two-sided normal 95% interval.
Z95 = 1.959963984540054


class RunError(UserError):
    """A run directory is missing, malformed, or has a schema this code does not read."""


@dataclass(frozen=True)
class CategoryResult:
    """A roll-up inside a suite (e.g. Reasoning Gym "Math")."""

    score: float | None
    stderr: float | None
    n_items: int | None


@dataclass(frozen=True)
class SuiteResult:
    """One suite's entry in results.json."""

    suite: str
    status: str
    score: float | None
    stderr: float | None
    n_items: int
    n_samples: int
    metric: str | None
    comparable: bool
    protocol: Mapping[str, Any]
    data_sha256: tuple[str, ...]
    categories: Mapping[str, CategoryResult]
    missing_file: str | None
    #: the whole results.json entry, read-only (suite-specific fields: pass^k, parts, ...)
    entry: Mapping[str, Any] = field(default_factory=dict)
    #: why a ``missing`` suite has no score (absent or empty file, interrupted, ...)
    missing_reason: str | None = None

    @property
    def has_score(self) -> bool:
        return self.status in SCORED_STATUSES and self.score is not None

    @property
    def why_missing(self) -> str:
        """One phrase for reports and the gate: the reason and the file, when known."""
        parts = [p for p in (self.missing_reason, self.missing_file) if p]
        if self.missing_reason and self.missing_file and self.missing_file in self.missing_reason:
            parts = [self.missing_reason]
        return ": ".join(parts) if parts else self.status


@dataclass(frozen=True)
class Run:
    """A loaded evaluation run directory."""

    path: Path
    run_id: str
    method: str
    method_kind: str | None  # explicit "method_kind" in results.json, else None (inferred later)
    model_name: str
    model_spec: str
    seed: int | None
    finished: bool
    suites: Mapping[str, SuiteResult] = field(default_factory=dict)
    #: The protocol preset the run was started with ("paper", "quick"); None if unrecorded.
    preset: str | None = None

    def samples_path(self, suite: str) -> Path:
        return self.path / SAMPLES_DIR / f"{suite}.jsonl"


@dataclass(frozen=True)
class ItemStat:
    """Per-item summary of a suite's samples: the mean is the per-item score."""

    mean: float
    n_samples: int
    var: float | None  # unbiased within-item sample variance; None with one sample
    prompt_hash: str | None


def _num(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RunError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def _stderr_of(entry: Mapping[str, Any], where: str) -> float | None:
    stderr = _num(entry.get("stderr"), f"{where}.stderr")
    ci = entry.get("ci95")
    if stderr is None and isinstance(ci, list | tuple) and len(ci) == 2:
        lo, hi = _num(ci[0], f"{where}.ci95"), _num(ci[1], f"{where}.ci95")
        if lo is not None and hi is not None:
            stderr = (hi - lo) / (2 * Z95)
    return stderr


def _suite(suite: str, entry: Any, where: str) -> SuiteResult:
    if not isinstance(entry, Mapping):
        raise RunError(f"{where}: suite {suite!r} is not an object")
    status = str(entry.get("status", "ok"))
    score = _num(entry.get("score"), f"{where}.score")
    if score is not None and not 0.0 <= score <= 1.0:
        raise RunError(f"{where}.score: {score} is not a fraction in [0, 1]")
    categories: dict[str, CategoryResult] = {}
    for name, cat in (entry.get("categories") or {}).items():
        if isinstance(cat, int | float) and not isinstance(cat, bool):
            cat = {"score": cat}  # a bare accuracy per category
        if not isinstance(cat, Mapping):
            raise RunError(f"{where}.categories.{name}: not an object")
        n = cat.get("n_items")
        categories[str(name)] = CategoryResult(
            score=_num(cat.get("score"), f"{where}.categories.{name}.score"),
            stderr=_stderr_of(cat, f"{where}.categories.{name}"),
            n_items=int(n) if isinstance(n, int) else None,
        )
    data = tuple(str(d.get("sha256")) for d in entry.get("data") or [] if isinstance(d, Mapping))
    reason = entry.get("missing_reason")
    if status in SCORED_STATUSES and entry.get("n_items") == 0:
        # written by an older harness as a score of 0.0 over nothing: read as missing
        status, score, reason = "missing", None, reason or NO_SCORED_ITEM
    return SuiteResult(
        suite=suite,
        status=status,
        score=score,
        stderr=_stderr_of(entry, where),
        n_items=int(entry.get("n_items") or 0),
        n_samples=int(entry.get("n_samples") or 0),
        metric=entry.get("metric"),
        comparable=bool(entry.get("comparable", True)),
        protocol=MappingProxyType(dict(entry.get("protocol") or {})),
        data_sha256=data,
        categories=MappingProxyType(categories),
        missing_file=entry.get("missing_file"),
        entry=MappingProxyType(dict(entry)),
        missing_reason=str(reason) if reason else None,
    )


def load_run(path: str | Path) -> Run:
    """Load a run directory (or its results.json); raise RunError naming what is wrong."""
    path = Path(path)
    if path.name == RESULTS_FILE and path.is_file():
        path = path.parent
    results = path / RESULTS_FILE
    if not path.exists():
        raise RunError(f"{path}: no such run directory")
    if not results.is_file():
        raise RunError(f"{path}: not an evaluation run (no {RESULTS_FILE})")
    try:
        doc = json.loads(read_text(results, "results file"))
    except ValueError as exc:
        raise RunError(f"{results}: unreadable ({exc})") from exc
    if not isinstance(doc, Mapping):
        raise RunError(f"{results}: top level is not an object")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RunError(f"{results}: schema_version {version!r}, this code reads {SCHEMA_VERSION}")
    suites_doc = doc.get("suites")
    if not isinstance(suites_doc, Mapping):
        raise RunError(f"{results}: 'suites' is missing or not an object")
    model_doc = doc.get("model")
    model: Mapping[str, Any] = model_doc if isinstance(model_doc, Mapping) else {}
    model_name = str(model.get("name") or model.get("spec") or path.name)
    kind = doc.get("method_kind")
    if kind is not None and kind not in METHOD_KINDS:
        raise RunError(f"{results}: method_kind {kind!r} is not one of {', '.join(METHOD_KINDS)}")
    seed = doc.get("seed")
    return Run(
        path=path,
        run_id=str(doc.get("run_id") or path.name),
        method=str(doc.get("method") or model_name),
        method_kind=kind,
        model_name=model_name,
        model_spec=str(model.get("spec") or ""),
        seed=seed if isinstance(seed, int) else None,
        finished=bool(doc.get("finished", True)),
        preset=doc.get("preset") if isinstance(doc.get("preset"), str) else None,
        suites=MappingProxyType(
            {str(s): _suite(str(s), e, f"{results}: suites.{s}") for s, e in suites_doc.items()}
        ),
    )


def load_item_scores(run: Run, suite: str) -> dict[str, ItemStat]:
    """Per-item scores (mean over samples) from ``samples/<suite>.jsonl``.

    A sample recorded twice (e.g. around a resume) counts once: the last record wins.
    """
    path = run.samples_path(suite)
    if not path.is_file():
        raise RunError(f"{run.path}: suite {suite!r} has no samples file ({path.name})")
    by_item: dict[str, dict[int, float]] = {}
    hashes: dict[str, str] = {}
    for lineno, rec in iter_jsonl(path, "samples file", error=RunError):
        where = f"{path}:{lineno}"
        if not isinstance(rec, Mapping) or "id" not in rec:
            raise RunError(f"{where}: sample record without an 'id'")
        score = _num(rec.get("score"), f"{where}: score")
        if score is None:
            raise RunError(f"{where}: sample record without a score")
        item = str(rec["id"])
        sample = rec.get("sample", 0)
        by_item.setdefault(item, {})[int(sample) if isinstance(sample, int) else 0] = score
        if rec.get("prompt_hash") is not None and (sample == 0 or item not in hashes):
            hashes[item] = str(rec["prompt_hash"])  # sample 0's prompt identifies the item
    out: dict[str, ItemStat] = {}
    for item, samples in by_item.items():
        values = list(samples.values())
        k = len(values)
        mean = sum(values) / k
        var = sum((v - mean) ** 2 for v in values) / (k - 1) if k > 1 else None
        out[item] = ItemStat(mean=mean, n_samples=k, var=var, prompt_hash=hashes.get(item))
    if not out:
        raise RunError(f"{path}: no sample records")
    return out
