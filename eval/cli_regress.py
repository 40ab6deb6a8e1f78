"""`spade regress`: exit 1 when a candidate run is significantly worse than a reference run.

Exit codes: 0 pass, 1 a gated suite is significantly worse (or missing in the candidate),
2 bad input (missing directory, schema mismatch, no overlapping items) or a candidate
unlike the reference (unfinished, partial, fewer items, another protocol, sample count,
data or prompt template) unless ``--allow`` names that difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from spade.eval._runs import load_run
from spade.eval.regress import GateConfig, compare_runs, render_text

from spade.cli import _args


def _suites(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(dict.fromkeys(s.strip() for v in values for s in v.split(",") if s.strip()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reference", required=True, metavar="RUN_DIR", help="stored good run")
    parser.add_argument("--candidate", required=True, metavar="RUN_DIR", help="run to gate")
    parser.add_argument(
        "--suites",
        nargs="+",
        metavar="SUITE",
        help="suites to gate (space or comma separated; default: every suite the reference has)",
    )
    parser.add_argument("--alpha", type=_args.probability_open, default=0.05,
                        help="family-wise level (Holm), in (0, 1)")
    parser.add_argument(
        "--min-effect",
        type=_args.float_in(0.0, 100.0),
        default=1.0,
        metavar="POINTS",
        help="smallest drop, in percentage points (0-100), that counts as a regression",
    )
    parser.add_argument("--seed", type=_args.non_negative_int, default=0,
                        help="seed for Monte Carlo/bootstrap")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="do not fail when the candidate lacks a suite the reference has",
    )
    parser.add_argument(
        "--allow",
        nargs="+",
        metavar="DIFFERENCE",
        help="gate a candidate that differs from the reference anyway (recorded in the "
        "verdict): unfinished, partial, fewer-items, protocol, samples, data, template",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def regress(reference: str | Path, candidate: str | Path, *, alpha: float = 0.05,
            min_effect: float = 0.01, seed: int = 0, allow_missing: bool = False,
            suites: tuple[str, ...] | None = None, allow: tuple[str, ...] = (),
            as_json: bool = False) -> int:
    """Gate ``candidate`` against ``reference`` (``min_effect`` as a fraction); prints the
    verdict and returns the exit code: 0 pass, 1 significantly worse."""
    config = GateConfig(alpha=alpha, min_effect=min_effect, seed=seed,
                        allow_missing=allow_missing, suites=suites, allow=allow)
    result = compare_runs(load_run(reference), load_run(candidate), config)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return 0 if result.passed else 1


def run(args: argparse.Namespace) -> int:
    return regress(args.reference, args.candidate, alpha=args.alpha,
                   min_effect=args.min_effect / 100.0, seed=args.seed,
                   allow_missing=args.allow_missing, suites=_suites(args.suites),
                   allow=_suites(args.allow) or (), as_json=args.json)
