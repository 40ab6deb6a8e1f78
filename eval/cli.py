"""``spade eval run``: evaluate a model on benchmark suites into a resumable run directory."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from eval.inspect_export import cli as export_cli
from spade.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = sub.add_parser("run", help="evaluate a model (resumes an interrupted run in --out)")
    run.add_argument("--model", required=True, metavar="SPEC",
                     help="hf:PATH[@latest|@best|@step-N], vllm:PATH, openai:BASE_URL#MODEL, "
                          "replay:FILE.jsonl, or oracle")
    run.add_argument("--suites", required=True, metavar="LIST",
                     help="comma-separated: aime24,aime25,gpqa_diamond,livecodebench,reasoning_gym")
    run.add_argument("--out", type=Path, metavar="DIR",
                     help="run directory (default: eval-runs/<label or model>-<time>)")
    run.add_argument("--limit", type=int, metavar="N",
                     help="first N items (Reasoning Gym: first N of every dataset)")
    run.add_argument("--samples", type=int, metavar="K", help="samples per item")
    run.add_argument("--temperature", type=float)
    run.add_argument("--top-p", type=float)
    run.add_argument("--top-k", type=int)
    run.add_argument("--max-tokens", type=int)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--label", help="method name for report tables (default: model name)")
    run.add_argument("--data-dir", type=Path, help="benchmark data (default: $SPADE_DATA_DIR "
                     "or ../shared/data next to the project)")
    run.add_argument("--lcb-files", type=Path, metavar="PATH",
                     help="official LiveCodeBench test*.jsonl file or folder (private tests)")
    run.add_argument("--batch-size", type=int, help="requests per provider call")
    run.add_argument("--device", help="hf: cpu or cuda (default: cuda when available)")
    run.add_argument("--dtype", help="hf/vllm weights dtype, e.g. bfloat16")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    export_cli.add_parser(sub)


def _default_out(label: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-")[:60] or "run"
    return Path("eval-runs") / f"{safe}-{stamp}"


def run(args: argparse.Namespace) -> int:
    if args.action == export_cli.ACTION:
        return export_cli.run(args)
    from eval._runner import RunConfig, run_eval
    from eval.data import resolve_data_dir
    from eval.suites import SUITES

    suites = tuple(s.strip() for s in args.suites.split(",") if s.strip())
    if not suites:
        raise UserError("--suites is empty")
    for sid in suites:
        SUITES.get(sid)
    if len(set(suites)) != len(suites):
        raise UserError("--suites lists a suite twice")
    if args.batch_size is not None and args.batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    overrides = {
        "samples": args.samples, "temperature": args.temperature, "top_p": args.top_p,
        "top_k": args.top_k, "max_tokens": args.max_tokens, "limit": args.limit,
    }
    extra = {}
    if args.lcb_files is not None:
        extra["lcb_files"] = str(args.lcb_files.expanduser().resolve())
    out = args.out or _default_out(args.label or args.model.split("/")[-1])
    cfg = RunConfig(
        model=args.model, suites=suites, out=out.resolve(),
        data_dir=resolve_data_dir(args.data_dir),
        seed=args.seed, label=args.label, overrides=overrides, extra=extra,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype, quiet=args.quiet,
    )
    results = run_eval(cfg)
    summary = {sid: {k: e.get(k) for k in ("status", "score", "stderr", "n_items", "metric")}
               for sid, e in results["suites"].items()}
    inspect_dir = export_cli.export_after_run(cfg.out)
    print(json.dumps({"out": str(cfg.out), "inspect": inspect_dir, "suites": summary}, indent=2))
    bad = [sid for sid, e in results["suites"].items() if e["status"] != "ok"]
    if bad:
        print(f"spade eval: not scored: {', '.join(bad)} (see results.json)", file=sys.stderr)
    return 0
