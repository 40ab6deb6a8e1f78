"""Red-team corpus: valid, buggy and hostile environments with the verdict each must get.

The corpus lives in ``redteam/`` (one module per environment) and ``redteam/redteam.yaml``
says what the verdict must be. Most cases run through :func:`validate_env` with one shared
bubblewrap sandbox; a representative subset runs through ``spade check-env`` as a user
would (exit code, exactly one JSON object on stdout, within ``--timeout``, no process left
behind). Cases where the validator is wrong today are strict xfails whose reason names the
wrong verdict and its cause, so fixing one turns its test into an XPASS failure until the
manifest entry drops its ``xfail``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spade.sandbox import Sandbox, SandboxLimits
from spade.validate import Stage, ValidationConfig, Verdict, validate_batch, validate_env

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "redteam"
MANIFEST: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "redteam.yaml").read_text())
FIELDS = {"valid", "stage", "reason_contains", "hint", "slow", "xfail"}
#: A fixed base seed keeps the corpus reproducible (production draws a secret one each time).
CONFIG = ValidationConfig(time_budget_s=15.0, seed=987_654_321)


def corpus_file(key: str) -> Path:
    return CORPUS / key.split("#", 1)[0]


def stages(spec: dict[str, Any]) -> list[str]:
    stage = spec.get("stage")
    if stage is None:
        return []
    return [stage] if isinstance(stage, str) else list(stage)


def cases() -> Iterator[Any]:
    for key, spec in MANIFEST.items():
        marks: list[Any] = [pytest.mark.bwrap]
        if spec.get("slow"):
            marks.append(pytest.mark.slow)
        if spec.get("xfail"):
            marks.append(pytest.mark.xfail(strict=True, reason=spec["xfail"]))
        yield pytest.param(key, spec, id=key.removesuffix(".py"), marks=marks)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    limits = SandboxLimits(call_timeout_s=1.0, load_timeout_s=5.0)
    with Sandbox(isolation="bwrap", limits=limits) as box:
        yield box


def test_manifest_matches_the_corpus() -> None:
    files = {p.name for p in CORPUS.glob("*.py")}
    listed = {corpus_file(key).name for key in MANIFEST}
    assert files == listed, (files - listed, listed - files)
    known = {str(s) for s in Stage}
    counts = {True: 0, False: 0, None: 0}
    for key, spec in MANIFEST.items():
        assert set(spec) <= FIELDS, (key, set(spec) - FIELDS)
        assert spec.get("valid", "missing") in (True, False, None), key
        assert set(stages(spec)) <= known, (key, spec.get("stage"))
        if spec["valid"] is not False:
            assert not stages(spec) and "reason_contains" not in spec, key
        counts[spec["valid"]] += 1
    assert counts[True] >= 15 and counts[False] >= 40, counts


@pytest.mark.parametrize(("key", "spec"), list(cases()))
def test_corpus_verdict(sandbox: Sandbox, key: str, spec: dict[str, Any]) -> None:
    source = corpus_file(key).read_text(encoding="utf-8")
    check_verdict(validate_env(source, hint=spec.get("hint"), sandbox=sandbox, config=CONFIG),
                  spec)  # fmt: skip


@pytest.mark.bwrap
def test_the_corpus_gets_the_same_verdicts_validated_side_by_side(sandbox: Sandbox) -> None:
    """Hostile, buggy and valid environments validated three at a time: each verdict is
    the one it gets alone (no validation sees another's workers or budget)."""
    keys = [k for k, spec in MANIFEST.items() if not spec.get("slow") and not spec.get("xfail")]
    items = [(corpus_file(k).read_text(encoding="utf-8"), MANIFEST[k].get("hint")) for k in keys]
    seen: list[int] = []
    verdicts = validate_batch(items, sandbox=sandbox, config=CONFIG, concurrency=3,
                              progress=lambda n, _: seen.append(n))  # fmt: skip
    assert seen == list(range(1, len(keys) + 1))
    wrong = []
    for key, verdict in zip(keys, verdicts, strict=True):
        try:
            check_verdict(verdict, MANIFEST[key])
        except AssertionError as exc:
            wrong.append(f"{key}: {exc}")
    assert not wrong, wrong


def check_verdict(verdict: Verdict, spec: dict[str, Any]) -> None:
    """The verdict is the one the manifest entry ``spec`` asks for."""
    json.dumps(verdict.to_json())  # every verdict serialises
    assert verdict.seconds < CONFIG.time_budget_s + 5.0
    if spec["valid"] is None:
        return  # contained either way; it only had to come back in time
    assert verdict.valid is spec["valid"], (str(verdict.stage), verdict.reason)
    if spec["valid"]:
        assert verdict.stage == Stage.DONE
        return
    wanted = stages(spec)
    if wanted:
        assert str(verdict.stage) in wanted, (str(verdict.stage), verdict.reason)
    assert verdict.stage != Stage.DONE and verdict.reason
    needle = spec.get("reason_contains")
    if needle:
        assert needle.lower() in verdict.reason.lower(), verdict.reason


# -- the CLI as a user runs it ---------------------------------------------------------------


def _cli(path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run check-env as a user does (``run_reaped`` catches anything it leaves behind)."""
    return subprocess.run(
        [sys.executable, "-m", "spade.cli", "check-env", str(path), "--json",
         "--timeout", str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )  # fmt: skip


FAST_CLI = [
    "v_tool_minimal.py",
    "b_reward_nan.py",
    "b_syntax_error.py",
    "h_socket_loopback.py",
    "h_fake_verdict_exit.py",
    "h_os_write_fd1.py",
    "h_stdout_swap.py",
    "h_fork_bomb.py",
    "h_cpu_thread.py",
]
SLOW_CLI = [
    "b_sleep_step.py",
    "h_import_loop.py",
    "h_init_loop.py",
    "h_recursion_segfault.py",
    "h_memory_bomb.py",
    "h_thread_network_delayed.py",
]


@pytest.mark.bwrap
@pytest.mark.parametrize(
    "name",
    [*FAST_CLI, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW_CLI)],
)
def test_cli_exit_code_json_timeout_and_no_leftovers(name: str, run_reaped: Any) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    # the hanging modules test the CLI's own timeout; the others get room for a loaded host
    timeout = 6.0 if name in SLOW_CLI else 30.0
    result, elapsed, left = run_reaped(lambda: _cli(CORPUS / name, timeout))
    data = json.loads(result.stdout)  # exactly one JSON document, nothing else on stdout
    assert isinstance(data, dict) and {"valid", "stage", "reason"} <= set(data), data
    assert isinstance(data["valid"], bool) and isinstance(data["reason"], str)
    assert result.returncode == (0 if data["valid"] else 1), (result.returncode, result.stderr)
    expected = MANIFEST[name]["valid"]
    if expected is not None and not MANIFEST[name].get("xfail"):
        assert data["valid"] is expected, data["reason"]
    if name in SLOW_CLI:
        assert elapsed < timeout + 3.0  # interpreter start-up on top of the timeout
    assert left == set()
