"""Render a Report as Markdown, LaTeX (booktabs) or CSV (long format, one value per line).

Scores are percentages with one decimal; empty cells say why: ``missing`` (the run has no
result for that suite), ``error``, ``n/a`` (not computable, e.g. an average with a missing
column), blank (a number the reference source does not report), ``—`` (the comparator
itself). ``†`` marks results not comparable with the paper protocol.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from spade.eval.report import _columns
from spade.eval.report._rows import RUNS_FAMILY, Cell
from spade.eval.report._table import GroupTable, Report, TableRow

KIND_NAMES = {
    "base": "base",
    "fixed_env": "fixed env",
    "spade": "SPADE",
    "ablation": "ablation",
    "other": "",
}
DAGGER_NOTE = (
    "† not comparable with the paper protocol (public-test subset, --limit slice, partial "
    "run or custom sampling protocol)."
)
MISSING_NOTE = ("missing: the run has no result for this suite (data absent, empty or unreadable, "
                "no sample scored before it stopped, or suite not run).")
_EMPTY = {"missing": "missing", "error": "error", "n/a": "n/a", "blank": "", "self": "—"}


def score_text(cell: Cell, dagger: str = "†", pm: str = " ± ") -> str:
    if cell.value is None:
        return _EMPTY.get(cell.state, cell.state)
    text = f"{100 * cell.value:.1f}"
    half = cell.half95
    if half is not None:
        text += f"{pm}{100 * half:.1f}"
    return text + (dagger if cell.flagged else "")


def delta_text(cell: Cell, dagger: str = "†") -> str:
    if cell.value is None:
        return _EMPTY.get(cell.state, cell.state)
    return f"{100 * cell.value:+.1f}" + (dagger if cell.flagged else "")


def _header(table: GroupTable) -> list[str]:
    return [
        "Method",
        "Kind",
        *(_columns.label(k) for k in table.columns),
        "Avg",
        "Δ base",
        "Δ best fixed",
    ]


def _cells(tr: TableRow, score: Callable[[Cell], str], delta: Callable[[Cell], str]) -> list[str]:
    return [
        *(score(c) for c in tr.cells),
        score(tr.average),
        delta(tr.delta_base),
        delta(tr.delta_best_fixed),
    ]


def _notes(report: Report, table: GroupTable) -> list[str]:
    notes = list(table.notes)
    if table.flagged:
        notes.append(DAGGER_NOTE)
    if any(c.state == "missing" for r in table.rows for c in r.cells):
        notes.append(MISSING_NOTE)
    return notes


def to_markdown(report: Report) -> str:
    out: list[str] = []
    for table in report.tables:
        head = _header(table)
        out += [f"### {table.title} (score, %)", ""]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join([":--", ":--"] + ["--:"] * (len(head) - 2)) + "|")
        family = RUNS_FAMILY
        for tr in table.rows:
            if tr.row.family != family:
                family = tr.row.family
                out.append(f"| *{family}* |" + " |" * (len(head) - 1))
            name = tr.row.display.replace("|", "\\|")
            out.append(
                "| "
                + " | ".join([name, KIND_NAMES.get(tr.row.kind, tr.row.kind)])
                + " | "
                + " | ".join(_cells(tr, score_text, delta_text))
                + " |"
            )
        out.append("")
        out += [f"- {n}" for n in _notes(report, table)]
        out.append("")
    out += [f"- {n}" for n in report.notes]
    return "\n".join(out).rstrip() + "\n"


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    text = "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)
    return (
        text.replace("±", r"$\pm$")
        .replace("†", r"\textsuperscript{\dag}")
        .replace("Δ", r"$\Delta$")
        .replace("—", "---")
        .replace("×", r"$\times$")
    )


def to_latex(report: Report) -> str:
    out: list[str] = []
    for table in report.tables:
        head = _header(table)
        n = len(head)
        out += [
            r"\begin{table}[t]",
            r"\centering",
            r"\small",
            rf"\caption{{{latex_escape(table.title)} (score, \%)}}",
            r"\begin{tabular}{ll" + "r" * (n - 2) + "}",
            r"\toprule",
            " & ".join(latex_escape(h) for h in head) + r" \\",
            r"\midrule",
        ]
        family = RUNS_FAMILY
        for tr in table.rows:
            if tr.row.family != family:
                family = tr.row.family
                out += [
                    r"\midrule",
                    rf"\multicolumn{{{n}}}{{l}}{{\emph{{{latex_escape(family)}}}}} \\",
                ]
            cells = [tr.row.display, KIND_NAMES.get(tr.row.kind, tr.row.kind)]
            cells += _cells(tr, score_text, delta_text)
            out.append(" & ".join(latex_escape(c) for c in cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", r"\par\smallskip\footnotesize"]
        notes = _notes(report, table) + list(report.notes)
        out.append(r" \\ ".join(latex_escape(note) for note in notes))
        out += [r"\end{table}", ""]
    return "\n".join(out)


CSV_FIELDS = (
    "group",
    "family",
    "method",
    "method_kind",
    "runs",
    "column",
    "label",
    "value_pct",
    "ci95_halfwidth_pct",
    "state",
    "comparable",
)


def to_csv(report: Report) -> str:
    """Long format: one line per (table, row, column); averages and deltas are columns too."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for table in report.tables:
        for tr in table.rows:
            entries = [
                (k, _columns.label(k), c) for k, c in zip(table.columns, tr.cells, strict=True)
            ]
            entries += [
                ("avg", "Avg", tr.average),
                ("delta_base", "Δ base", tr.delta_base),
                ("delta_best_fixed", "Δ best fixed", tr.delta_best_fixed),
            ]
            for key, label, cell in entries:
                half = cell.half95
                writer.writerow(
                    {
                        "group": table.group,
                        "family": tr.row.family,
                        "method": tr.row.method,
                        "method_kind": tr.row.kind,
                        "runs": len(tr.row.run_ids),
                        "column": key,
                        "label": label,
                        "value_pct": "" if cell.value is None else f"{100 * cell.value:.4f}",
                        "ci95_halfwidth_pct": "" if half is None else f"{100 * half:.4f}",
                        "state": cell.state,
                        "comparable": str(not cell.flagged).lower(),
                    }
                )
    return buf.getvalue()


RENDERERS: dict[str, Callable[[Report], str]] = {
    "md": to_markdown,
    "latex": to_latex,
    "csv": to_csv,
}
