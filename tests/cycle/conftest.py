"""Fixtures of the cycle tests: the REAL bubblewrap sandbox, validator, episode runner and
run store; only the model is replaced by the built-in scripted designer and agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spade.config import RunConfig, load_config
from spade.sandbox import Sandbox, SandboxLimits

#: A tiny games run: 2 prompts x 3 designs, 2 plays per arm, lexical embeddings.
TINY: dict[str, Any] = {
    "seed": 0,
    "cycles": 2,
    "policy": {"spec": "scripted"},
    "designer": {"setting": "games", "prompts_per_cycle": 2, "designs_per_prompt": 3},
    "agent": {"plays_per_arm": 2, "max_turns": 10},
    "diversity": {"embedder": "lexical"},
}


def tiny_config(**overrides: Any) -> RunConfig:
    return RunConfig.model_validate(TINY).with_overrides(**overrides)


def write_config(path: Path, data: dict[str, Any] | None = None) -> Path:
    path.write_text(yaml.safe_dump(data or TINY), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as sb:
        yield sb


@pytest.fixture()
def default_config() -> RunConfig:
    return load_config()
