"""Turn runs and reference files into table rows (one row per method).

Runs that share a ``method`` label (e.g. several evaluation seeds, or several training
seeds of one recipe) are pooled into ONE row: each cell is the mean over the runs that
have it, and its standard error is the larger of the propagated within-run error
(``sqrt(sum se_i^2) / R``) and the between-run error (``sd / sqrt(R)``) — conservative
when R is small. ``per_run=True`` lists every run on its own row instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from spade.eval._runs import Run, SuiteResult
from spade.eval.report import _columns, _tool_use
from spade.eval.report._reference import ReferenceTable

RUNS_FAMILY = "runs"

_KIND_PATTERNS = (
    ("ablation", re.compile(r"^(ablation|spade[\s_/(:-]*(no|w/?o|without|frozen|solve|learning))")),
    ("spade", re.compile(r"^spade\b")),
    ("fixed_env", re.compile(r"^(baseline[\s_:-]*)?(fixed|rlve|static)")),
    ("base", re.compile(r"^base(line)?\b|^base[\s_:-]")),
)


def infer_kind(method: str) -> str:
    """Row kind from a method label's prefix.

    ``base*`` -> base; ``fixed*``, ``rlve*``, ``static*`` (optionally after ``baseline-``) ->
    fixed_env; ``spade-no-*``, ``spade w/o *``, ``spade-frozen*``, ``ablation*`` -> ablation;
    other ``spade*`` -> spade; anything else -> other. results.json ``method_kind`` or
    ``--kind`` override this.
    """
    label = method.strip().lower()
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(label):
            return kind
    return "other"


@dataclass(frozen=True)
class Cell:
    """One table entry. ``value``/``stderr`` are fractions; ``state`` says why it is empty."""

    value: float | None = None
    stderr: float | None = None
    state: str = "ok"  # ok | missing | error | blank (unknown reference number) | n/a
    flagged: bool = False  # not comparable with the paper protocol (dagger)

    @property
    def half95(self) -> float | None:
        from spade.eval._runs import Z95

        return None if self.stderr is None else Z95 * self.stderr


@dataclass(frozen=True)
class Row:
    """A method: its cells by column key, plus reported averages for reference rows."""

    method: str
    kind: str
    family: str
    cells: Mapping[str, Cell]
    suite_states: Mapping[str, str] = field(default_factory=dict)
    averages: Mapping[str, float] = field(default_factory=dict)
    run_ids: tuple[str, ...] = ()
    unfinished: bool = False

    @property
    def display(self) -> str:
        n = len(self.run_ids)
        return f"{self.method} ({n} runs)" if n > 1 else self.method

    @property
    def is_reference(self) -> bool:
        return self.family != RUNS_FAMILY

    def cell(self, key: str) -> Cell:
        if key in self.cells:
            return self.cells[key]
        if self.is_reference:
            return Cell(state="blank")
        state = self.suite_states.get(_columns.split_key(key)[0], "missing")
        return Cell(state="error" if state == "error" else "missing")


def _suite_cells(result: SuiteResult) -> dict[str, Cell]:
    if not result.has_score:
        return {}
    flagged = (
        not result.comparable
        or result.status == "partial"
        or result.protocol.get("name", "paper") != "paper"
    )
    if _tool_use.is_tool_use(result.suite) and result.suite in _columns.SUITES:
        return _tool_use.cells(result, flagged)
    if _columns.expands(result.suite) and result.categories:
        return {
            f"{result.suite}/{name}": Cell(cat.score, cat.stderr, flagged=flagged)
            for name, cat in result.categories.items()
            if cat.score is not None
        }
    return {result.suite: Cell(result.score, result.stderr, flagged=flagged)}


def _pool(cells: Sequence[Cell]) -> Cell:
    values = [c.value for c in cells if c.value is not None]
    if not values:  # e.g. a tool-use part every run recorded as unavailable
        return Cell(state=cells[0].state)
    r = len(values)
    mean = sum(values) / r
    errs = [c.stderr for c in cells]
    within = None if None in errs else math.sqrt(sum(e * e for e in errs if e is not None)) / r
    between = None
    if r > 1:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (r - 1))
        between = sd / math.sqrt(r)
    known = [e for e in (within, between) if e is not None]
    return Cell(mean, max(known) if known else None, flagged=any(c.flagged for c in cells))


def rows_from_runs(
    runs: Sequence[Run], *, per_run: bool = False, kinds: Mapping[str, str] | None = None
) -> list[Row]:
    """One row per method label (or per run), in first-seen order."""
    kinds = kinds or {}
    grouped: dict[str, list[Run]] = {}
    for run in runs:
        label = f"{run.method} [{run.run_id}]" if per_run else run.method
        grouped.setdefault(label, []).append(run)
    rows = []
    for label, members in grouped.items():
        per_key: dict[str, list[Cell]] = {}
        states: dict[str, str] = {}
        for run in members:
            for suite, result in run.suites.items():
                if result.has_score or suite not in states:
                    states[suite] = "ok" if result.has_score else result.status
                for key, cell in _suite_cells(result).items():
                    per_key.setdefault(key, []).append(cell)
        first = members[0]
        kind = kinds.get(label) or kinds.get(first.method) or first.method_kind
        rows.append(
            Row(
                method=label,
                kind=kind or infer_kind(first.method),
                family=RUNS_FAMILY,
                cells={key: _pool(cells) for key, cells in per_key.items()},
                suite_states=states,
                run_ids=tuple(r.run_id for r in members),
                unfinished=not all(r.finished for r in members),
            )
        )
    return rows


def rows_from_reference(table: ReferenceTable) -> list[Row]:
    """The reported rows; a row with a number the source does not state says "derived"."""
    return [
        Row(
            method=f"{row.method} [derived]" if row.is_derived else row.method,
            kind=row.kind,
            family=table.title,
            cells={key: Cell(value) for key, value in row.scores.items()},
            averages=dict(row.averages),
        )
        for row in table.rows
    ]
