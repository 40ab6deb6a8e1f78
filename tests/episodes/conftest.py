"""Fixtures of the episode tests: the REAL bubblewrap sandbox and the real example envs.

Only the model is replaced (by the scripted policy); environments, sandbox and parsing are
the real ones.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spade.envs import load_example_source
from spade.sandbox import Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    sb = Sandbox(isolation="bwrap", limits=SandboxLimits(call_timeout_s=2.0))
    yield sb
    close = getattr(sb, "close", None)
    if close is not None:
        close()


@pytest.fixture()
def examples(sandbox: Sandbox):
    """A handle factory keyed by example name (one fresh instance per episode)."""

    def factory(env_id: str):
        return sandbox.load(load_example_source(env_id))

    return factory


