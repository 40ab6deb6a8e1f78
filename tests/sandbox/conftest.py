"""Shared fixtures: one bwrap sandbox per test module (fork servers start once)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _sandbox_procs import FAST_LIMITS, descendants

from spade.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", FAST_LIMITS) as box:
        yield box
    assert descendants(os.getpid()) == set(), "sandbox processes survived close()"
