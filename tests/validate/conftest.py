"""Real sandboxes for the validator tests (bubblewrap, plus a fast unisolated one)."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator

import pytest

from spade.sandbox import Sandbox, SandboxLimits

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module")
def bwrap_sandbox() -> Iterator[Sandbox]:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    with Sandbox(isolation="bwrap", limits=SandboxLimits(call_timeout_s=2.0)) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def fast_sandbox() -> Iterator[Sandbox]:
    """No namespaces (allow_weak): for envs that only test the battery's logic."""
    limits = SandboxLimits(call_timeout_s=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the loud weak-isolation warning
        sandbox = Sandbox(isolation="none", limits=limits, allow_weak=True)
    with sandbox:
        yield sandbox
