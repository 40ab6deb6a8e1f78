"""GRPO group advantages, zero-variance accounting, and the per-role grouping.

A group is the set of samples that share a prompt: for the agent, the plays of one
environment in one arm; for the designer, the designs answering one prompt (same corpus
document, skill and memory snapshot). The advantage of a sample is its reward minus the
group mean, divided by the group's POPULATION standard deviation plus ``eps`` when
``normalize_std`` (the GRPO recipe; Dr. GRPO-style runs switch the division off).

A group whose rewards are all equal (spread ``max - min <= zero_tol``) carries no
gradient: its advantages are exactly zero and it is counted in
``GroupStats.n_zero_variance`` so the cycle can report the fraction.

Agent groups: by default only the UNHINTED plays train the agent (its reward is its return
without the hint); hinted plays are logged but get no gradient. With
``train_on_hinted`` they form their own groups (their prompt differs, so they are
never normalised together with the unhinted plays).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

K = TypeVar("K", bound=Hashable)

#: Groups whose reward spread is at most this are zero-variance.
ZERO_TOL = 1e-9


class Arm(StrEnum):
    """Which arm a play belongs to."""

    HINTED = "hinted"
    UNHINTED = "unhinted"


class AdvantageConfig(BaseModel):
    """How both roles' advantages are computed (one block of the cycle config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Divide centred rewards by the group's standard deviation (plain GRPO).
    normalize_std: bool = True
    eps: float = Field(default=1e-6, gt=0.0)
    #: Give hinted plays an agent gradient too (own groups); off by default.
    train_on_hinted: bool = False

    def apply(self, groups: Mapping[K, Sequence[float]]) -> GroupAdvantages[K]:
        """:func:`grouped_advantages` with these settings."""
        return grouped_advantages(groups, normalize_std=self.normalize_std, eps=self.eps)


@dataclass(frozen=True)
class GroupStats:
    """Accounting over a batch of groups (per role)."""

    n_groups: int
    n_samples: int
    n_zero_variance: int

    @property
    def zero_variance_fraction(self) -> float:
        """Share of groups without gradient (0.0 for an empty batch)."""
        return self.n_zero_variance / self.n_groups if self.n_groups else 0.0

    def to_json(self) -> dict[str, float | int]:
        return {
            "n_groups": self.n_groups,
            "n_samples": self.n_samples,
            "n_zero_variance": self.n_zero_variance,
            "zero_variance_fraction": self.zero_variance_fraction,
        }


@dataclass(frozen=True)
class GroupAdvantages(Generic[K]):
    """Advantages per group key, in the same order as the rewards given, plus stats."""

    advantages: dict[K, list[float]]
    stats: GroupStats


def is_zero_variance(rewards: Sequence[float], zero_tol: float = ZERO_TOL) -> bool:
    """True when a group cannot produce a gradient (size < 2 or no spread)."""
    return len(rewards) < 2 or max(rewards) - min(rewards) <= zero_tol


def group_advantages(
    rewards: Sequence[float],
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
    zero_tol: float = ZERO_TOL,
) -> list[float]:
    """GRPO advantages of one group: ``(r - mean) / (std + eps)`` (or ``r - mean``)."""
    values = [float(r) for r in rewards]
    if any(not math.isfinite(v) for v in values):
        raise ValueError("group rewards must be finite")
    if is_zero_variance(values, zero_tol):
        return [0.0] * len(values)
    mu = math.fsum(values) / len(values)
    centred = [v - mu for v in values]
    if not normalize_std:
        return centred
    std = math.sqrt(math.fsum(c * c for c in centred) / len(centred))
    return [c / (std + eps) for c in centred]


def grouped_advantages(
    groups: Mapping[K, Sequence[float]],
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
    zero_tol: float = ZERO_TOL,
) -> GroupAdvantages[K]:
    """Advantages for every group of one role, with zero-variance accounting."""
    out: dict[K, list[float]] = {}
    n_zero = 0
    n_samples = 0
    for key, rewards in groups.items():
        n_samples += len(rewards)
        if is_zero_variance(rewards, zero_tol):
            n_zero += 1
        out[key] = group_advantages(
            rewards, normalize_std=normalize_std, eps=eps, zero_tol=zero_tol
        )
    return GroupAdvantages(out, GroupStats(len(groups), n_samples, n_zero))


def advantages_for_groups(
    groups: Sequence[Sequence[float]],
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
    zero_tol: float = ZERO_TOL,
) -> tuple[list[list[float]], GroupStats]:
    """List form of :func:`grouped_advantages`: groups in, advantages per group + stats."""
    result = grouped_advantages(
        dict(enumerate(groups)), normalize_std=normalize_std, eps=eps, zero_tol=zero_tol
    )
    return [result.advantages[i] for i in range(len(groups))], result.stats


def agent_groups(
    unhinted: Mapping[str, Sequence[float]],
    hinted: Mapping[str, Sequence[float]] | None = None,
    *,
    train_on_hinted: bool = False,
) -> dict[tuple[str, Arm], list[float]]:
    """Agent GRPO groups keyed by ``(env_id, arm)``: the plays of one environment and arm.

    ``unhinted`` and ``hinted`` map env ids to the returns of their plays. Hinted plays are
    included only when ``train_on_hinted`` (see the module docstring).
    """
    groups: dict[tuple[str, Arm], list[float]] = {
        (env_id, Arm.UNHINTED): list(returns) for env_id, returns in unhinted.items()
    }
    if train_on_hinted and hinted is not None:
        for env_id, returns in hinted.items():
            groups[(env_id, Arm.HINTED)] = list(returns)
    return groups
