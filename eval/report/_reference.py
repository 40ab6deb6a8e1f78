"""Reported numbers kept in ``results/reference/*.json`` (the paper's tables).

A reference file holds rows of numbers exactly as published (percent), with the source
they were taken from. Unknown numbers are simply absent: reference rows show blanks, and
nothing here is ever derived per benchmark. A number the source does not state but that
follows from numbers it does state (e.g. an average minus a reported gain) is kept only
with its formula, under the row's ``derived`` (``{key: formula}``), and is shown labelled
as derived, never as reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from spade.eval._runs import METHOD_KINDS, RunError

REFERENCE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ReferenceRow:
    """One reported method: scores per column key and reported group averages (fractions)."""

    method: str
    kind: str
    scores: Mapping[str, float]
    averages: Mapping[str, float]
    note: str | None
    #: column/group key -> the formula of a number the source does not state itself
    derived: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_derived(self) -> bool:
        return bool(self.derived)


@dataclass(frozen=True)
class ReferenceTable:
    """One reference file: a family of rows compared among themselves."""

    path: Path
    title: str
    source: str
    rows: tuple[ReferenceRow, ...]


def default_reference_dir() -> Path:
    """``results/reference`` of the project checkout this package was loaded from."""
    return Path(__file__).resolve().parents[2] / "results" / "reference"


def _percent(value: Any, where: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0.0 <= value <= 100.0:
        raise RunError(f"{where}: expected a percentage in [0, 100], got {value!r}")
    return float(value) / 100.0


def load_reference(path: str | Path) -> ReferenceTable:
    """Load one reference file; raise RunError naming the problem."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RunError(f"{path}: no such reference file") from exc
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: unreadable reference file ({exc})") from exc
    if not isinstance(doc, Mapping) or doc.get("schema_version") != REFERENCE_SCHEMA_VERSION:
        raise RunError(f"{path}: not a reference file (schema_version {REFERENCE_SCHEMA_VERSION})")
    if not doc.get("source"):
        raise RunError(f"{path}: a reference file must name its source")
    rows = []
    for i, row in enumerate(doc.get("rows") or []):
        where = f"{path}: rows[{i}]"
        kind = row.get("method_kind", "other")
        if kind not in METHOD_KINDS or kind == "reference":
            raise RunError(f"{where}: bad method_kind {kind!r}")
        scores = {
            str(k): _percent(v, f"{where}.scores.{k}") for k, v in row.get("scores", {}).items()
        }
        avgs = {
            str(k): _percent(v, f"{where}.averages.{k}") for k, v in row.get("averages", {}).items()
        }
        derived = row.get("derived") or {}
        if not isinstance(derived, Mapping) or not all(
                isinstance(v, str) and v for v in derived.values()):
            raise RunError(f"{where}.derived: expected {{key: formula}}")
        unknown = set(derived) - set(scores) - set(avgs)
        if unknown:
            raise RunError(f"{where}.derived: no number for {sorted(unknown)}")
        rows.append(
            ReferenceRow(
                method=str(row["method"]),
                kind=kind,
                scores=MappingProxyType(scores),
                averages=MappingProxyType(avgs),
                note=row.get("note"),
                derived=MappingProxyType({str(k): str(v) for k, v in derived.items()}),
            )
        )
    return ReferenceTable(path, str(doc.get("title") or path.stem), str(doc["source"]), tuple(rows))


def load_references(paths: list[str | Path] | None) -> list[ReferenceTable]:
    """Files or directories (every ``*.json`` inside); None means the project's defaults."""
    if paths is None:
        base = default_reference_dir()
        paths = [base] if base.is_dir() else []
    tables: list[ReferenceTable] = []
    for p in map(Path, paths):
        files = sorted(p.glob("*.json")) if p.is_dir() else [p]
        tables.extend(load_reference(f) for f in files)
    return tables
