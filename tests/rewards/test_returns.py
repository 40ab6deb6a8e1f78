"""Properties of returns, solve rates, regret and the plateau."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade.rewards import episode_return, plateau, regret, solve_rate

returns = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
matched = st.integers(min_value=1, max_value=16).flatmap(
    lambda n: st.tuples(st.lists(returns, min_size=n, max_size=n),
                        st.lists(returns, min_size=n, max_size=n))
)


def test_episode_return_sums_and_clips() -> None:
    assert episode_return([0.25, 0.25]) == 0.5
    assert episode_return([1.0, 1.0, 0.5]) == 1.0
    assert episode_return([-0.7, -0.7]) == -1.0
    assert episode_return([]) == 0.0
    with pytest.raises(ValueError):
        episode_return([float("nan")])


@given(st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), max_size=30))
def test_episode_return_in_bounds(rewards: list[float]) -> None:
    r = episode_return(rewards)
    assert -1.0 <= r <= 1.0
    if -1.0 <= math.fsum(rewards) <= 1.0:
        assert r == pytest.approx(math.fsum(rewards))


@given(matched)
def test_regret_non_negative_and_exact(arms: tuple[list[float], list[float]]) -> None:
    hinted, unhinted = arms
    r = regret(hinted, unhinted)
    assert r >= 0.0
    gap = sum(hinted) / len(hinted) - sum(unhinted) / len(unhinted)
    assert r == pytest.approx(max(0.0, gap), abs=1e-12)


@given(matched)
def test_regret_zero_when_hint_does_not_help(arms: tuple[list[float], list[float]]) -> None:
    hinted, unhinted = arms
    worse = [min(h, u) for h, u in zip(hinted, unhinted, strict=True)]
    assert regret(worse, unhinted) == 0.0
    assert regret(unhinted, unhinted) == 0.0


def test_regret_requires_matched_arms() -> None:
    with pytest.raises(ValueError, match="matched"):
        regret([1.0, 1.0], [0.0])
    with pytest.raises(ValueError):
        regret([], [])
    assert regret([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]) == 0.5


def test_solve_rate_threshold() -> None:
    assert solve_rate([1.0, 0.99, 0.0, 1.0]) == 0.5
    assert solve_rate([0.5, 0.7], success_threshold=0.6) == 0.5
    assert solve_rate([0.1 + 0.2 + 0.7]) == 1.0  # float noise below 1.0 still wins
    with pytest.raises(ValueError):
        solve_rate([])


def test_plateau_shape_points() -> None:
    assert plateau(0.4) == plateau(0.5) == plateau(0.6) == 1.0
    assert plateau(0.15) == 0.0 and plateau(0.85) == 0.0
    assert plateau(0.0) == 0.0 and plateau(1.0) == 0.0
    assert plateau(0.275) == pytest.approx(0.5)
    assert plateau(0.725) == pytest.approx(0.5)
    assert plateau(0.3, ramp=0.0) == 0.0
    with pytest.raises(ValueError):
        plateau(0.5, low=0.7, high=0.6)


@given(st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1))
def test_plateau_monotone_outside_band(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert 0.0 <= plateau(lo) <= 1.0
    if hi <= 0.4:  # rising edge
        assert plateau(lo) <= plateau(hi)
    if lo >= 0.6:  # falling edge
        assert plateau(lo) >= plateau(hi)
    if abs(a - b) < 0.01:  # Lipschitz with constant 1/ramp
        assert abs(plateau(a) - plateau(b)) <= abs(a - b) / 0.25 + 1e-12
