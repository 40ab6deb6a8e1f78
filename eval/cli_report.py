"""`spade report RUN_DIR...`: paper-style tables (md, LaTeX, CSV) and a PNG chart."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spade.eval._runs import METHOD_KINDS, load_run
from spade.eval.report import RENDERERS, build_report, load_references, plot_report

from spade.cli import _args
from spade.errors import UserError
from spade.textfile import atomic_write_bytes, atomic_write_text


def _kind(text: str) -> tuple[str, str]:
    method, sep, kind = text.rpartition("=")
    if not sep or not method or kind not in METHOD_KINDS or kind == "reference":
        raise argparse.ArgumentTypeError(
            "expected METHOD=KIND with KIND one of base, fixed_env, spade, ablation, other; "
            f"got {text!r}"
        )
    return method, kind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR",
                        help="evaluation run directories (each counted once; at least one "
                             "unless --reference-only)")
    parser.add_argument("--format", choices=sorted(RENDERERS), default="md", help="table format")
    parser.add_argument(
        "--baseline",
        metavar="NAME",
        help="method label of the base row (default: the row of kind base)",
    )
    parser.add_argument("--out", metavar="FILE", type=_args.output_file,
                        help="write the table here instead of stdout")
    parser.add_argument(
        "--plot", metavar="FILE.png", type=_args.output_file,
        help="also write a bar chart (95%% intervals)"
    )
    parser.add_argument(
        "--reference",
        action="append",
        metavar="PATH",
        help="reported-numbers file or directory (repeatable; default: results/reference/)",
    )
    parser.add_argument("--no-reference", action="store_true", help="omit the reported numbers")
    parser.add_argument("--reference-only", action="store_true",
                        help="render only the paper's reported numbers (no RUN_DIR)")
    parser.add_argument(
        "--kind",
        action="append",
        type=_kind,
        default=[],
        metavar="METHOD=KIND",
        help="set a method's row kind (overrides results.json method_kind and the label prefix)",
    )
    parser.add_argument(
        "--per-run", action="store_true", help="one row per run instead of pooling runs per method"
    )


def unique_runs(paths: list[str]) -> list[Path]:
    """Each run directory once (a run listed twice must not count as two runs)."""
    seen: dict[Path, str] = {}
    for text in paths:
        path = Path(text).expanduser()
        if path.name == "results.json":
            path = path.parent
        key = path.resolve()
        if key in seen:
            print(f"spade report: note: {text} is the same run as {seen[key]}; counted once",
                  file=sys.stderr)
            continue
        seen[key] = text
    return [Path(t) for t in seen.values()]


def _plot(report: Any, target: Path) -> None:
    """The chart, drawn beside ``target`` and renamed over it once complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.partial{target.suffix or '.png'}")
    try:
        plot_report(report, tmp)
        atomic_write_bytes(target, tmp.read_bytes())
    finally:
        tmp.unlink(missing_ok=True)


def write_report(runs: Sequence[str], *, fmt: str = "md", out: Path | None = None,
                 plot: Path | None = None, kinds: Mapping[str, str] | None = None,
                 references: Sequence[str] | None = None, no_reference: bool = False,
                 baseline: str | None = None, per_run: bool = False) -> str:
    """The table of ``runs`` in ``fmt`` (with the reported numbers unless ``no_reference``),
    written to ``out`` (else stdout) and its chart to ``plot``; returns the table."""
    loaded = [load_run(p) for p in unique_runs(list(runs))]
    refs = [] if no_reference else load_references(list(references) if references else None)
    report = build_report(loaded, refs, baseline=baseline, per_run=per_run, kinds=dict(kinds or {}))
    if not report.tables:
        raise UserError("nothing to report: the runs contain no suites")
    text = RENDERERS[fmt](report)
    if plot:  # first: a plot that fails leaves no table claiming it was written
        _plot(report, Path(plot))
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, text)
    else:
        sys.stdout.write(text)
    return text


def run(args: argparse.Namespace) -> int:
    if args.reference_only and (args.runs or args.no_reference):
        raise UserError("--reference-only takes no RUN_DIR and excludes --no-reference")
    if not args.runs and not args.reference_only:
        raise UserError("no RUN_DIR given (pass --reference-only for the reported numbers alone)")
    write_report(args.runs, fmt=args.format, out=args.out, plot=args.plot, kinds=dict(args.kind),
                 references=args.reference, no_reference=args.no_reference,
                 baseline=args.baseline, per_run=args.per_run)
    return 0
