"""``python -m eval.crosscheck``: run the lm-eval cross-check and print its summary (JSON)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from spade.eval.crosscheck._run import crosscheck
from spade.eval.crosscheck._tasks import FLAVOURS, SUPPORTED
from spade.eval.data import resolve_data_dir

from spade.errors import UserError


def _list(text: str, known: tuple[str, ...], what: str) -> list[str]:
    got = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in got if s not in known]
    if bad or not got:
        raise UserError(f"unknown {what} {bad or text!r} (known: {', '.join(known)})")
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.crosscheck", description=__doc__)
    p.add_argument("--model", type=Path, default=None,
                   help="local transformers dir (default: the prepared SmolLM2-135M-Instruct)")
    p.add_argument("--suites", default="aime24")
    p.add_argument("--flavours", default=",".join(FLAVOURS))
    p.add_argument("--limit", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-ours", action="store_true", help="skip our own hf run")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        suites = _list(args.suites, SUPPORTED, "suite(s)")
        flavours = _list(args.flavours, FLAVOURS, "flavour(s)")
        if args.model is None:
            from spade.policy import prepare_smollm2

            args.model = prepare_smollm2()
        out = args.out or Path(tempfile.mkdtemp(prefix="spade-crosscheck-"))
        report = crosscheck(args.model, suites, out.resolve(), resolve_data_dir(args.data_dir),
                            flavours=flavours, limit=args.limit, max_tokens=args.max_tokens,
                            seed=args.seed, run_ours=not args.no_ours, threads=args.threads)
    except UserError as exc:
        print(f"crosscheck: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"out": str(out), "wall_s": report["wall_s"],
                      "summary": report["summary"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
