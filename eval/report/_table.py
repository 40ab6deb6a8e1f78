"""The report model: one table per benchmark group, with averages and deltas.

Conventions (stated in every rendered table):
- a row's Avg is the unweighted mean of the group's columns that every run evaluated (a
  suite only some runs evaluated is left out of every row's Avg, and a note says so), and
  n/a when the row lacks a score for one of them;
  its standard error assumes independent columns;
- "Δ base" compares Avg with the base row of the same family (runs are one family, each
  reference file another), "Δ best fixed" with the fixed-environment row of that family
  whose Avg is highest;
- reference rows show only numbers their source reports (blank otherwise), and their Avg is
  the reported suite average, never a mean we compute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spade.eval._runs import Run
from spade.eval.report import _columns, _tool_use
from spade.eval.report._reference import ReferenceTable
from spade.eval.report._rows import RUNS_FAMILY, Cell, Row, rows_from_reference, rows_from_runs

from spade.errors import UserError

_KIND_ORDER = {"base": 0, "fixed_env": 1, "spade": 2, "ablation": 3, "other": 4}


@dataclass(frozen=True)
class TableRow:
    row: Row
    cells: tuple[Cell, ...]
    average: Cell
    delta_base: Cell
    delta_best_fixed: Cell


@dataclass(frozen=True)
class GroupTable:
    group: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[TableRow, ...]
    notes: tuple[str, ...]

    @property
    def flagged(self) -> bool:
        return any(c.flagged for r in self.rows for c in (*r.cells, r.average))


@dataclass(frozen=True)
class Report:
    tables: tuple[GroupTable, ...]
    notes: tuple[str, ...]


def _average(row: Row, group: str, columns: Sequence[str]) -> Cell:
    if row.is_reference:
        value = row.averages.get(group)
        return Cell(value) if value is not None else Cell(state="blank")
    cells = [row.cell(k) for k in columns]
    if not cells or any(c.value is None for c in cells):
        return Cell(state="n/a")
    mean = sum(c.value for c in cells if c.value is not None) / len(cells)
    errs = [c.stderr for c in cells]
    se = None if None in errs else math.sqrt(sum(e * e for e in errs if e)) / len(cells)
    return Cell(mean, se, flagged=any(c.flagged for c in cells))


def _delta(avg: Cell, against: Cell | None, is_self: bool) -> Cell:
    if is_self:
        return Cell(state="self")
    if against is None:
        return Cell(state="blank")
    if avg.value is None or against.value is None:
        return Cell(state="n/a")
    return Cell(avg.value - against.value, flagged=avg.flagged or against.flagged)


def _choose_base(rows: Sequence[Row], baseline: str | None) -> Row | None:
    if baseline is not None:
        for row in rows:
            if baseline in (row.method, row.display):
                return row
        names = ", ".join(repr(r.method) for r in rows) or "none"
        raise UserError(f"--baseline {baseline!r} matches no row (methods: {names})")
    bases = [r for r in rows if r.kind == "base"]
    if len(bases) > 1:
        names = ", ".join(repr(r.method) for r in bases)
        raise UserError(f"several base rows ({names}): choose one with --baseline")
    return bases[0] if bases else None


def _common_columns(group: str, columns: Sequence[str], rows: Sequence[Row]
                    ) -> tuple[tuple[str, ...], list[str]]:
    """The columns of the suites every run row evaluated (so one run with an extra suite
    does not blank every other row's Avg), and a note when that leaves columns out.

    A suite a run attempted but could not score (missing data, an error) still counts as
    evaluated: that row's Avg is n/a, never an average over fewer columns than its peers.
    A column no run evaluated stays in (every Avg is then n/a, as for a single run).
    """
    wanted = _columns.averaged(group, columns)
    runs = [r for r in rows if not r.is_reference]

    def evaluated(row: Row, key: str) -> bool:
        return key in row.cells or _columns.split_key(key)[0] in row.suite_states

    def partial(key: str) -> bool:  # some runs evaluated it, others did not
        done = [evaluated(r, key) for r in runs]
        return any(done) and not all(done)

    common = tuple(k for k in wanted if not partial(k))
    if not runs or common == tuple(wanted) or not common:
        return tuple(wanted), []
    left_out = [_columns.label(k) for k in wanted if k not in common]
    return common, [
        f"Avg of our runs is over the {len(common)} column(s) every run evaluated; left out "
        f"(not evaluated by every run): {', '.join(left_out)}."
    ]


def _group_table(group: str, rows: Sequence[Row], base_of: Mapping[str, Row | None]) -> GroupTable:
    keys = {k for r in rows for k in r.cells if _columns.group_of(k) == group}
    with_data = {_columns.split_key(k)[0] for k in keys}
    keys |= {
        s
        for r in rows
        for s in r.suite_states
        if _columns.group_of(s) == group and s not in with_data
    }
    columns = tuple(_columns.ordered(keys))
    averaged, notes = _common_columns(group, columns, rows)
    averages = {id(r): _average(r, group, averaged) for r in rows}
    out = []
    for family in dict.fromkeys(r.family for r in rows):
        members = [r for r in rows if r.family == family]
        base = base_of.get(family)
        base_avg = averages[id(base)] if base is not None and base in members else None
        fixed = [r for r in members if r.kind == "fixed_env" and averages[id(r)].value is not None]
        best = max(fixed, key=lambda r: averages[id(r)].value or 0.0) if fixed else None
        best_avg = averages[id(best)] if best is not None else None
        who = "our runs" if family == RUNS_FAMILY else family
        if base_avg is not None and base is not None:
            notes.append(f"Δ base ({who}): against {base.display!r}.")
        if best is None and any(r.kind == "fixed_env" for r in members):
            notes.append(f"Δ best fixed ({who}): no fixed-environment row has a complete Avg.")
        if best is not None:
            notes.append(
                f"Δ best fixed ({who}): against {best.display!r}, the fixed-environment "
                "baseline with the highest Avg."
            )
        for r in members:
            avg = averages[id(r)]
            out.append(
                TableRow(
                    row=r,
                    cells=tuple(r.cell(k) for k in columns),
                    average=avg,
                    delta_base=_delta(avg, base_avg, r is base),
                    delta_best_fixed=_delta(avg, best_avg, r is best),
                )
            )
    canonical = _columns.CANONICAL.get(group)
    has_runs = any(not r.is_reference for r in rows)
    if has_runs and canonical is not None and tuple(averaged) != canonical:
        notes.append(
            f"Avg of our runs is over {len(averaged)} benchmark column(s), not the "
            f"paper's {len(canonical)} held-out benchmarks: not comparable to reported averages."
        )
    if group == _columns.TOOL_USE:
        unavailable = any(c.state == _tool_use.UNAVAILABLE for r in out for c in r.cells)
        notes.extend(_tool_use.table_notes(unavailable))
    return GroupTable(group, _columns.GROUP_TITLES[group], columns, tuple(out), tuple(notes))


def _preset_notes(runs: Sequence[Run]) -> list[str]:
    """Which protocol preset each run used (a quick slice must never pass for the paper's)."""
    by_preset: dict[str, list[str]] = {}
    for run in runs:
        by_preset.setdefault(run.preset or "unrecorded", []).append(run.run_id)
    if not by_preset:
        return []
    if len(by_preset) == 1:
        (preset,) = by_preset
        return [f"Preset: {preset} (all runs)."]
    parts = [f"{p}: {', '.join(ids)}" for p, ids in sorted(by_preset.items())]
    return [f"Presets: {'; '.join(parts)}."]


def _missing_notes(runs: Sequence[Run]) -> list[str]:
    """Why each missing cell is missing (absent or empty file, interrupted before a score)."""
    out = []
    for run in runs:
        gone = [f"{suite} ({result.why_missing})" for suite, result in run.suites.items()
                if result.status == "missing"]
        if gone:
            out.append(f"Missing in {run.run_id}: {'; '.join(gone)}.")
    return out


def build_report(
    runs: Sequence[Run],
    references: Sequence[ReferenceTable] = (),
    *,
    baseline: str | None = None,
    per_run: bool = False,
    kinds: Mapping[str, str] | None = None,
) -> Report:
    """Assemble the tables for ``runs`` plus the reported reference rows."""
    run_rows = sorted(
        rows_from_runs(runs, per_run=per_run, kinds=kinds),
        key=lambda r: _KIND_ORDER.get(r.kind, len(_KIND_ORDER)),
    )
    base_of: dict[str, Row | None] = {RUNS_FAMILY: _choose_base(run_rows, baseline)}
    ref_rows: list[Row] = []
    for table in references:
        rows = rows_from_reference(table)
        base_of[table.title] = next((r for r in rows if r.kind == "base"), None)
        ref_rows.extend(rows)

    def groups_of(rows: Sequence[Row]) -> set[str]:
        keys = [k for r in rows for k in (*r.cells, *r.suite_states)]
        return {_columns.group_of(k) for k in keys} | {g for r in rows for g in r.averages}

    wanted = groups_of(run_rows) if run_rows else groups_of(ref_rows)
    tables = []
    for group in _columns.GROUP_ORDER:
        if group not in wanted:
            continue
        refs = [r for r in ref_rows if group in groups_of([r])]
        tables.append(_group_table(group, [*run_rows, *refs], base_of))
    notes = ["± is the half-width of a normal 95% interval (1.96 × standard error)."]
    if any(len(r.run_ids) > 1 for r in run_rows):
        notes.append(
            "Rows marked (N runs) pool runs with the same method label: mean over runs, "
            "standard error max(propagated within-run, between-run sd/sqrt(N))."
        )
    if any(t.group == _columns.TOOL_USE for t in tables):
        notes.extend(_tool_use.user_model_notes(runs))
        notes.extend(_tool_use.gold_failure_notes(runs))
    notes.extend(_preset_notes(runs))
    notes.extend(_missing_notes(runs))
    unfinished = [rid for r in run_rows if r.unfinished for rid in r.run_ids]
    if unfinished:
        notes.append(f"Unfinished run(s): {', '.join(unfinished)}.")
    used = {r.family for t in tables for tr in t.rows for r in [tr.row]}
    notes.extend(f"Reported numbers, {t.title}: {t.source}" for t in references if t.title in used)
    notes.extend(f"Derived, not reported ({t.title}): {r.method} {key} = {formula}."
                 for t in references if t.title in used
                 for r in t.rows for key, formula in r.derived.items())
    return Report(tuple(tables), tuple(notes))
