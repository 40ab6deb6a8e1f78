"""Shared fixtures: one bwrap sandbox per test module (fork servers start once)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _sandbox_procs import FAST_LIMITS, ROOMY, descendants

from spade.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", FAST_LIMITS) as box:
        yield box
    assert descendants(os.getpid()) == set(), "sandbox processes survived close()"


@pytest.fixture(scope="module")
def roomy(sandbox: Sandbox) -> Iterator[Sandbox]:
    """A sandbox whose calls may take long: filling a tmp with thousands of files, or
    printing 100 MiB, takes seconds on a loaded machine, and these tests are about what
    the sandbox stops or names, not about a timeout stopping it first. (It asks for
    ``sandbox`` so that it closes first: that fixture checks that no sandbox process is
    left.)"""
    with Sandbox("bwrap", ROOMY) as box:
        yield box
