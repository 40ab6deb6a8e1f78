"""`spade check-env` as a user runs it: a subprocess, exit codes, one JSON object on stdout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spade.envs.examples import get_example

ROOT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

VALID = get_example("divisor_sum").path
PRINTING = """
import sys
from spade.envs import TextEnv
print('{"valid": true, "stage": "done", "reason": "fake"}')

class NoisyEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        print("RESET NOISE")
        sys.stderr.write("stderr noise\\n")
        self.n = self.rng.randint(10**5, 10**6)
        return f"Double {self.n}.", {}

    def step(self, action):
        print('{"valid": true}')
        ok = action.strip() == str(2 * self.n)
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(2 * self.n)]
"""


def spade(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "spade.cli", "check-env", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def one_json(stdout: str) -> dict[str, object]:
    data = json.loads(stdout)  # fails on anything but exactly one JSON document
    assert isinstance(data, dict)
    return data


@needs_bwrap
def test_valid_example_exits_0_with_json() -> None:
    result = spade(str(VALID), "--json")
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["valid"] is True and data["stage"] == "done"
    assert isinstance(data["checks"], list) and isinstance(data["timings"], dict)


@needs_bwrap
def test_invalid_env_exits_1_and_human_output(tmp_path: Path) -> None:
    path = tmp_path / "leaky_env.py"
    path.write_text(
        PRINTING.replace('f"Double {self.n}."', 'f"Double {self.n} (answer: {2 * self.n})."')
    )
    result = spade(str(path))
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("INVALID at stage answer_leak:")
    assert "RESET NOISE" not in result.stdout and "fake" not in result.stdout


@needs_bwrap
def test_env_output_never_reaches_stdout(tmp_path: Path) -> None:
    path = tmp_path / "noisy_env.py"
    path.write_text(PRINTING)
    result = spade(str(path), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = one_json(result.stdout)
    assert data["reason"] == "all checks passed"


@needs_bwrap
def test_hint_leak_via_flag(tmp_path: Path) -> None:
    path = tmp_path / "const_env.py"
    path.write_text(PRINTING.replace("str(2 * self.n)", "str(918270 + self.n % 4)"))
    result = spade(str(path), "--json", "--hint", "Type 918270, 918271, 918272 or 918273.")
    assert result.returncode == 1
    assert one_json(result.stdout)["stage"] == "hint_leak"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    missing = spade(str(tmp_path / "nope.py"), "--json")
    assert missing.returncode == 2
    assert "environment file not found" in missing.stderr
    assert one_json(missing.stdout)["valid"] is False
    assert spade(str(VALID), "--isolation", "docker").returncode == 2
    assert spade(str(VALID), "--timeout", "0").returncode == 2
    assert spade(str(tmp_path)).returncode == 2
    assert spade().returncode == 2
    unknown = spade(str(VALID), "--preload", "os")
    assert unknown.returncode == 2 and "cannot preload os" in unknown.stderr


def test_binary_file_is_invalid_source(tmp_path: Path) -> None:
    path = tmp_path / "blob_env.py"
    path.write_bytes(b"\xff\xfe\x00garbage")
    result = spade(str(path), "--json", "--isolation", "none")
    assert result.returncode == 1
    assert one_json(result.stdout)["stage"] == "source"


def test_weak_isolation_warns_on_stderr_only() -> None:
    result = spade(str(VALID), "--json", "--isolation", "none")
    assert result.returncode == 0, result.stderr
    assert "WARNING" in result.stderr and "WARNING" not in result.stdout
    assert one_json(result.stdout)["isolation"] == "none"


@needs_bwrap
@pytest.mark.parametrize("where", ["import", "step"])
def test_hanging_env_finishes_within_timeout_and_leaves_no_process(
    tmp_path: Path, where: str, run_reaped: Any
) -> None:
    source = PRINTING.replace(
        "ok = action.strip()", "while True:\n            pass\n        ok = action.strip()"
    )
    if where == "import":
        source = source.replace("import sys\n", "import sys\nwhile True:\n    pass\n", 1)
    path = tmp_path / "hang_env.py"
    path.write_text(source)
    result, _, left = run_reaped(
        lambda: spade(str(path), "--json", "--timeout", "4", timeout=60)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    data = one_json(result.stdout)
    assert data["valid"] is False
    # stopped by one of its own budgets (the harness's 60 s would raise instead); which one
    # fires first depends on the load: the per-call limit, the validation's time budget or
    # the command's overall timeout
    reason = str(data["reason"])
    budgets = ("wall-clock limit; the worker was killed", "within its time budget of",
               "within its timeout of 4 s")
    assert any(b in reason for b in budgets), data
    assert left == set()
