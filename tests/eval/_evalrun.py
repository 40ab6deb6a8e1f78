"""Helpers for the harness tests: the shared data dir and running `spade eval` in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _inputs import require

from spade.cli import main

ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    return require("benchmark_data")


def cli(*args: str) -> int:
    return main(["eval", "run", "--quiet", *args])


def results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def samples(out: Path, suite: str) -> list[dict[str, Any]]:
    path = out / "samples" / f"{suite}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def subprocess_cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "spade.cli", "eval", "run", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )
