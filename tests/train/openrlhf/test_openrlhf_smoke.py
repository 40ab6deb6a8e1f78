"""benchmarks/gpu_smoke.py sizes its batch from the visible GPUs so that OpenRLHF's and
DeepSpeed's batch checks hold on 1, 2, 4 and 8 GPUs (the installed CLI's own checks run
where OpenRLHF is installed), and on the CPU it trains, checkpoints and says so."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType

import pytest
from spade.train.openrlhf import Layout, command, unsupported

ROOT = Path(__file__).resolve().parents[3]


def _smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_smoke", ROOT / "benchmarks" /
                                                  "gpu_smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed() -> bool:
    try:
        version("openrlhf")
    except PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_the_batch_fits_every_gpu_count(gpus: int, tmp_path: Path) -> None:
    r = _smoke().smoke_recipe(gpus, "openrlhf")
    assert unsupported(r) == [] and r.cluster.gpus == gpus == r.cluster.engines
    samples = r.grpo.samples_per_step
    assert samples >= gpus and samples % gpus == 0  # OpenRLHF's and DeepSpeed's checks
    args = command(r, Layout(tmp_path, "/m"), "0.11.2")
    assert "--train.dynamic_batch_enable" in args
    if _installed():
        from spade.train.openrlhf._cli import check_command

        assert check_command(args) > 100  # the installed CLI accepts it, train() included


def test_the_old_fixed_batch_fails_openrlhfs_checks(tmp_path: Path) -> None:
    """What the smoke test used to run at 8 GPUs: 12 samples."""
    r = _smoke().smoke_recipe(1, "openrlhf").with_overrides(**{
        "cluster.gpus_per_node": 8, "grpo.tickets_per_step": 3})
    assert any("split evenly" in u for u in unsupported(r))


@pytest.mark.slow
def test_on_the_cpu_it_trains_checkpoints_and_says_so(tmp_path: Path) -> None:
    # its own process, as a user runs it: the contract tests serve stand-ins for GPU-only
    # modules (wandb among them) in this one, and TRL would take them for the real ones
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_smoke.py"), "--device", "cpu",
         "--backend", "trl", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=900, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["backend"] == "trl" and len(result["steps"]) == 2
    assert any("checkpoint step-2 published" in p for p in result["proved"])
    assert any("2 steps trained" in p for p in result["proved"])
