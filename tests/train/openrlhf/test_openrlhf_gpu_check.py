"""benchmarks/gpu_check.py runs every part at tiny shapes with ``--device cpu``, as a CI
machine would run it: one JSON report, each part timed, OpenRLHF's parts where OpenRLHF
is installed (``nox -s openrlhf_contract``) and a one-line reason where it is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade.installed import is_installed

ROOT = Path(__file__).resolve().parents[3]


def test_unknown_parts_and_missing_gpu_are_one_line_errors() -> None:
    script = str(ROOT / "benchmarks" / "gpu_check.py")
    done = subprocess.run([sys.executable, script, "--parts", "env,warp"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and "unknown parts" in json.loads(done.stdout)["error"]
    import torch

    if not torch.cuda.is_available():
        done = subprocess.run([sys.executable, script], capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 2 and "--device cpu" in json.loads(done.stdout)["error"]


@pytest.mark.slow
def test_every_part_runs_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu" / "check.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"),
                           "--device", "cpu", "--out", str(out)], capture_output=True,
                          text=True, timeout=1500, cwd=ROOT, env=env, check=False)
    report = json.loads(out.read_text())
    assert json.loads(done.stdout) == report
    parts = report["parts"]
    assert list(parts) == ["env", "sandbox", "smoke", "openrlhf", "memory"]
    assert all("seconds" in p for p in parts.values())
    for name in ("env", "sandbox", "smoke"):
        assert parts[name]["ok"], (name, parts[name])
    assert len(parts["smoke"]["proved"]) >= 2
    if not is_installed("openrlhf"):  # this folder is a namespace "openrlhf" here
        assert "not installed" in parts["openrlhf"]["error"]
        assert done.returncode == 1
        return
    assert parts["openrlhf"]["ok"] and parts["openrlhf"]["samples"] == 12
    rows = parts["memory"]["shapes"]["tiny"]["rows"]
    assert len(rows) == 9 and all(r.get("train") == "ran" for r in rows)
    assert report["ok"] and done.returncode == 0
