"""GRPO group advantages and zero-variance accounting."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from spade.rewards import (
    AdvantageConfig,
    Arm,
    advantages_for_groups,
    agent_groups,
    group_advantages,
    grouped_advantages,
)

group = st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=2, max_size=32)


def _std(xs: list[float]) -> float:
    mu = sum(xs) / len(xs)
    return math.sqrt(sum((x - mu) ** 2 for x in xs) / len(xs))


@given(group)
def test_advantages_centred_and_unit_std(rewards: list[float]) -> None:
    assume(max(rewards) - min(rewards) > 1e-2)  # std >> eps (1e-6): unit std within 1e-3
    adv = group_advantages(rewards)
    assert len(adv) == len(rewards)
    assert abs(sum(adv)) < 1e-6 * len(adv)
    assert _std(adv) == pytest.approx(1.0, rel=1e-3)
    # order preserved: larger reward, larger advantage
    ranked = sorted(zip(rewards, adv, strict=True))
    for (_, a_low), (_, a_high) in itertools.pairwise(ranked):
        assert a_low <= a_high


@given(group, st.floats(min_value=-3, max_value=3))
def test_invariant_to_constant_shift(rewards: list[float], c: float) -> None:
    assume(max(rewards) - min(rewards) > 1e-3)
    a = group_advantages(rewards)
    b = group_advantages([r + c for r in rewards])
    assert a == pytest.approx(b, abs=1e-6)


@given(group)
def test_unnormalised_is_centred(rewards: list[float]) -> None:
    assume(max(rewards) - min(rewards) > 1e-3)
    adv = group_advantages(rewards, normalize_std=False)
    mu = sum(rewards) / len(rewards)
    assert adv == pytest.approx([r - mu for r in rewards])


def test_zero_variance_groups_are_zero_and_counted() -> None:
    advs, stats = advantages_for_groups([[1.0, 1.0, 1.0], [0.0, 1.0], [0.3], [0.1 + 0.2, 0.3]])
    assert advs[0] == [0.0, 0.0, 0.0]
    assert advs[2] == [0.0]
    assert advs[3] == [0.0, 0.0]
    assert advs[1] == pytest.approx([-1.0, 1.0], abs=1e-5)
    assert (stats.n_groups, stats.n_samples, stats.n_zero_variance) == (4, 8, 3)
    assert stats.zero_variance_fraction == 0.75
    assert stats.to_json()["zero_variance_fraction"] == 0.75
    empty = grouped_advantages({})
    assert empty.stats.zero_variance_fraction == 0.0


def test_non_finite_rewards_rejected() -> None:
    with pytest.raises(ValueError):
        group_advantages([0.0, float("inf")])


def test_agent_groups_unhinted_only_by_default() -> None:
    unhinted = {"e1": [0.0, 1.0], "e2": [1.0, 1.0]}
    hinted = {"e1": [1.0, 1.0], "e2": [0.0, 1.0]}
    groups = agent_groups(unhinted, hinted)
    assert set(groups) == {("e1", Arm.UNHINTED), ("e2", Arm.UNHINTED)}
    both = agent_groups(unhinted, hinted, train_on_hinted=True)
    assert both[("e2", Arm.HINTED)] == [0.0, 1.0]
    res = AdvantageConfig(train_on_hinted=True).apply(both)
    assert res.stats.n_groups == 4 and res.stats.n_zero_variance == 2
    assert res.advantages[("e1", Arm.UNHINTED)] == pytest.approx([-1.0, 1.0], abs=1e-5)
