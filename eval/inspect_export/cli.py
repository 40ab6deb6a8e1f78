"""``spade eval export-inspect RUN_DIR [--out DIR]``: write a run's inspect-ai logs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from spade.cli import _args
from spade.errors import UserError

ACTION = "export-inspect"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the action on ``spade eval``'s sub-command parser."""
    p = sub.add_parser(
        ACTION, help="write a run's inspect-ai logs (then: inspect view --log-dir DIR)"
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="evaluation run directory")
    p.add_argument(
        "--out", type=_args.output_dir, metavar="DIR",
        help="log directory (default: RUN_DIR/inspect)"
    )
    p.add_argument("--suites", metavar="LIST", help="comma-separated subset of the run's suites")


def run(args: argparse.Namespace) -> int:
    from spade.eval.inspect_export import export_run

    suites = None
    if args.suites is not None:
        suites = [s.strip() for s in args.suites.split(",") if s.strip()]
        if not suites:
            raise UserError("--suites is empty")
    result = export_run(args.run_dir, args.out, suites=suites)
    print(json.dumps(result.to_json(), indent=2))
    print(f"view with: inspect view --log-dir {result.out}", file=sys.stderr)
    return 0


def export_after_run(run_dir: Path) -> str | None:
    """The automatic export at the end of ``spade eval run``: the log directory, or None.

    A run's results never depend on this step, so a failure is reported on stderr in one
    line and the run still succeeds.
    """
    from spade.eval.inspect_export import export_run

    try:
        return str(export_run(run_dir).out)
    except Exception as exc:  # the run is complete and saved; the export is a convenience
        print(f"spade eval: inspect export skipped ({exc})", file=sys.stderr)
        return None
