"""Fixtures of the cycle tests: the REAL bubblewrap sandbox, validator, episode runner and
run store; only the model is replaced by the built-in scripted designer and agent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spade.sandbox import Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as sb:
        yield sb
