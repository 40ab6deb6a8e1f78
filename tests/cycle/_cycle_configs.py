"""Tiny run configs shared by the cycle and CLI tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from spade.config import RunConfig

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
