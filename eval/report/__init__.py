"""Paper-style tables and charts from evaluation run directories (``spade report``)."""

from spade.eval.report._columns import SUITES, label
from spade.eval.report._plot import plot_report
from spade.eval.report._reference import ReferenceTable, default_reference_dir, load_references
from spade.eval.report._render import RENDERERS, to_csv, to_latex, to_markdown
from spade.eval.report._rows import Cell, Row, infer_kind
from spade.eval.report._table import GroupTable, Report, TableRow, build_report

__all__ = [
    "RENDERERS",
    "SUITES",
    "Cell",
    "GroupTable",
    "ReferenceTable",
    "Report",
    "Row",
    "TableRow",
    "build_report",
    "default_reference_dir",
    "infer_kind",
    "label",
    "load_references",
    "plot_report",
    "to_csv",
    "to_latex",
    "to_markdown",
]
