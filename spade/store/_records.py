"""Typed rows of the run store and the state a resumed run starts from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spade.rewards import Arm


@dataclass(frozen=True)
class EnvRecord:
    """One designed environment of the pool (valid or not) and its annotations.

    ``verdict`` is the validator's ``Verdict.to_json()``; solve rates, regret and the
    designer reward are ``None`` for environments that were not played.
    """

    env_id: str
    cycle: int
    source: str
    valid: bool
    hint: str | None = None
    skill: str | None = None
    doc_id: str | None = None
    verdict: dict[str, Any] | None = field(default=None, compare=True, hash=False)
    solve_rate_hinted: float | None = None
    solve_rate_unhinted: float | None = None
    regret: float | None = None
    designer_reward: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class PlayRecord:
    """One episode: play ``index`` of an ``arm`` on ``seed`` (matched across arms)."""

    env_id: str
    cycle: int
    arm: Arm
    index: int
    seed: int
    ret: float
    stop_reason: str
    turns: int
    extra: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class RunState:
    """Everything a resumed run needs from the last COMPLETED cycle."""

    cycle: int
    memory: Any
    sampler: Any
    rng: Any
    metrics: dict[str, Any]
    env_pool: Any = None  # the environment pool a trainer plays (None for self-play)
