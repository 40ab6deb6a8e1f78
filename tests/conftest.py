"""Fixtures shared by every test package."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from _inputs import require

pytest_plugins = ["pytester"]  # tests/test_markers.py runs the markers in a pytest of its own

T = TypeVar("T")
PR_SET_CHILD_SUBREAPER = 36


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The markers are requirements, checked before any fixture runs: ``needs(INPUT...)``
    skips, naming where it looked, when an input kept outside the repository is absent;
    ``bwrap`` fails when bubblewrap is missing (isolation is what such a test checks, and
    a skip would pass it unchecked)."""
    for mark in item.iter_markers("needs"):
        for name in mark.args:
            require(name)
    if item.get_closest_marker("bwrap") is not None:
        from spade.sandbox import IsolationUnavailable, _launch

        try:
            _launch.find_bwrap()
        except IsolationUnavailable as exc:
            missing = str(exc)
        else:
            return
        pytest.fail(f"marked bwrap, but {missing}", pytrace=False)


def _live_children() -> set[int]:
    """Our children that are still running (zombies are reaped and not counted)."""
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) != me:
            continue
        if state == "Z":
            os.waitpid(int(entry.name), os.WNOHANG)
        else:
            found.add(int(entry.name))
    return found


@pytest.fixture
def run_reaped() -> Callable[[Callable[[], T]], tuple[T, float, set[int]]]:
    """Run ``command()`` as a child subreaper: ``(result, seconds, pids it left running)``.

    As a subreaper this process inherits anything the command leaves behind, so a daemon
    that escaped the command's own cleanup shows up in the returned set.
    """

    def run(command: Callable[[], T]) -> tuple[T, float, set[int]]:
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        try:
            before = _live_children()
            began = time.monotonic()
            result = command()
            elapsed = time.monotonic() - began
            time.sleep(0.3)
            left = _live_children() - before
        finally:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        return result, elapsed, left

    return run


# -- the tiny random model (built in code, cached per session) ----------------------
@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from spade.train._models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture()
def cache_env(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SPADE_CACHE_DIR pointing where ``model.path: tiny`` finds the fixture's model."""
    root = tiny_model_dir.parent / "cache"
    target = root / "models" / "tiny-llama-v1"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(tiny_model_dir)
    monkeypatch.setenv("SPADE_CACHE_DIR", str(root))
    return root


@pytest.fixture(scope="module")
def static_pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-cycle self-play run of the scripted designer: a static pool source."""
    from spade.config import RunConfig
    from spade.cycle import run_selfplay

    require("corpora")
    run = tmp_path_factory.mktemp("pool") / "run"
    config = RunConfig.model_validate({
        "seed": 0, "cycles": 1, "policy": {"spec": "scripted", "frozen_designer": "scripted"},
        "designer": {"prompts_per_cycle": 2, "designs_per_prompt": 3},
        "agent": {"plays_per_arm": 2, "max_turns": 10}, "diversity": {"embedder": "lexical"}})
    run_selfplay(config, run, progress=lambda _: None)
    return run
