"""SIGKILL a real `spade selfplay` run at random moments, resume it, compare with an
uninterrupted run: metrics.jsonl without timing fields must be byte-identical, and so must
the exported environment pool."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _cycle_configs import TINY, write_config

from spade.cycle import without_timing

ROOT = Path(__file__).resolve().parents[2]
CONFIG: dict[str, Any] = {**TINY, "cycles": 3}


def _command(config: Path, run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spade.cli", "selfplay", "--config", str(config),
            "--run-dir", str(run_dir), *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(config: Path, run_dir: Path, *extra: str) -> float:
    began = time.monotonic()
    done = subprocess.run(_command(config, run_dir, *extra), env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return time.monotonic() - began


def _killed(config: Path, run_dir: Path, delay: float, *extra: str) -> None:
    proc = subprocess.Popen(_command(config, run_dir, *extra), env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


def _stripped(run_dir: Path) -> bytes:
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return b"".join(json.dumps(without_timing(json.loads(line)), separators=(",", ":")).encode()
                    + b"\n" for line in lines)


def _pool(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / "envs").iterdir())}


def _completed(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return path.read_text(encoding="utf-8").count("\n") if path.is_file() else 0


def _resume(run_dir: Path) -> tuple[str, ...]:
    return ("--resume",) if run_dir.exists() else ()


def _check_resumes(tmp_path: Path, fractions: list[float]) -> None:
    """Kill runs at ``fractions`` of the uninterrupted run's duration, then resume."""
    config = write_config(tmp_path / "run.yaml", CONFIG)
    reference = tmp_path / "reference"
    duration = _run(config, reference)
    expected, expected_pool = _stripped(reference), _pool(reference)
    assert expected.count(b"\n") == CONFIG["cycles"]
    assert b'"timing_s"' not in expected and b'"valid"' in expected
    interrupted = 0
    for k, fraction in enumerate(fractions):
        run_dir = tmp_path / f"killed-{k}"
        delay = fraction * duration
        _killed(config, run_dir, delay)
        while _completed(run_dir) == CONFIG["cycles"] and delay > 0.1:
            # the run finished before the kill (a quieter host than the reference run
            # had): kill a fresh run earlier
            shutil.rmtree(run_dir)
            delay /= 2
            _killed(config, run_dir, delay)
        interrupted += _completed(run_dir) < CONFIG["cycles"]
        # killed while resuming; a kill before the run directory existed (the config and
        # corpus are checked first) left nothing to resume, so that run simply starts
        _killed(config, run_dir, delay / 2, *_resume(run_dir))
        _run(config, run_dir, *_resume(run_dir))
        assert _stripped(run_dir) == expected, f"differs after a kill at {fraction:.2f}"
        assert _pool(run_dir) == expected_pool
    assert interrupted, "no kill landed before the run finished; the test proved nothing"


@pytest.mark.needs("corpora")
def test_killed_and_resumed_run_matches(tmp_path: Path) -> None:
    _check_resumes(tmp_path, [random.Random(7).uniform(0.3, 0.7)])


@pytest.mark.slow
@pytest.mark.needs("corpora")
def test_killed_at_many_moments_matches(tmp_path: Path) -> None:
    rng = random.Random(2024)
    _check_resumes(tmp_path, sorted(rng.uniform(0.05, 0.95) for _ in range(5)))


@pytest.mark.needs("corpora")
def test_resume_refuses_another_config(tmp_path: Path) -> None:
    config = write_config(tmp_path / "run.yaml", {**CONFIG, "cycles": 1})
    _run(config, tmp_path / "run")
    other = write_config(tmp_path / "other.yaml", {**CONFIG, "seed": 1})
    done = subprocess.run(_command(other, tmp_path / "run", "--resume"), env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "different config" in errors[0] and "seed" in errors[0]
    assert "loading policy" not in done.stderr  # refused before any model is loaded


@pytest.mark.needs("corpora")
def test_sigterm_stops_cleanly_and_prints_the_resume_command(tmp_path: Path) -> None:
    """SIGTERM mid-run: exit 130, one line naming the command; that command finishes it."""
    import shlex

    config = write_config(tmp_path / "run.yaml", CONFIG)
    reference = tmp_path / "reference"
    _run(config, reference)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_command(config, run_dir), env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300  # a hang, however loaded the host
    while _completed(run_dir) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # SIGTERM once the first cycle is on disk, two still to run
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before SIGTERM arrived")
    assert proc.returncode == 130, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("spade selfplay: interrupted; resume with: spade selfplay ")
    command = shlex.split(last.split("resume with: ", 1)[1])
    assert command[command.index("--run-dir") + 1] == str(run_dir.resolve())
    done = subprocess.run([sys.executable, "-m", "spade.cli", *command[1:]], env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _stripped(run_dir) == _stripped(reference)
