"""Per-episode and per-environment quantities: returns, solve rates, hint-based regret.

These are pure functions on plain numbers so that the cycle, the trainer adapters and the
tests all compute the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: Episode returns are clipped to this interval.
RETURN_BOUNDS = (-1.0, 1.0)


def _finite(values: Iterable[float], what: str) -> list[float]:
    out = [float(v) for v in values]
    for v in out:
        if not math.isfinite(v):
            raise ValueError(f"{what} must be finite, got {v!r}")
    return out


def episode_return(rewards: Iterable[float]) -> float:
    """Sum of an episode's step rewards, clipped to [-1, 1].

    Truncated episodes keep what they earned: the caller passes the rewards received so far.
    """
    total = math.fsum(_finite(rewards, "step rewards"))
    lo, hi = RETURN_BOUNDS
    return min(hi, max(lo, total))


#: Float noise in returns summed from partial rewards that still counts as reaching a threshold.
WIN_TOL = 1e-9


def is_win(total: float, success_threshold: float) -> bool:
    """Whether an episode's return ``total`` reaches ``success_threshold`` (a "win")."""
    return total >= success_threshold - WIN_TOL


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of a non-empty sequence (``ValueError`` when empty)."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return math.fsum(_finite(values, "values")) / len(values)


def solve_rate(returns: Sequence[float], success_threshold: float = 1.0) -> float:
    """Fraction of episodes whose return reaches ``success_threshold`` (a "win").

    A small tolerance (``WIN_TOL``) absorbs float noise in returns summed from partial
    rewards.
    """
    if not returns:
        raise ValueError("solve rate of zero episodes")
    wins = sum(1 for r in _finite(returns, "returns") if is_win(r, success_threshold))
    return wins / len(returns)


def regret(hinted_returns: Sequence[float], unhinted_returns: Sequence[float]) -> float:
    """Hint-based regret ``max(0, mean(hinted) - mean(unhinted))``.

    The two arms are matched: play ``i`` of the hinted arm used the same seed as play ``i`` of
    the unhinted arm, so both must have the same (non-zero) length; anything else is a
    ``ValueError`` because it means the arms were not played as the design requires.
    """
    if len(hinted_returns) != len(unhinted_returns):
        raise ValueError(
            f"regret needs matched arms: {len(hinted_returns)} hinted vs "
            f"{len(unhinted_returns)} unhinted plays"
        )
    if not hinted_returns:
        raise ValueError("regret of zero plays")
    return max(0.0, mean(hinted_returns) - mean(unhinted_returns))


def plateau(x: float, *, low: float = 0.4, high: float = 0.6, ramp: float = 0.25) -> float:
    """A flat-topped bump: 1 on ``[low, high]``, falling linearly to 0 over ``ramp`` outside.

    ``plateau(low - ramp) == plateau(high + ramp) == 0``; with the defaults a solve rate of
    0.15 or below, or 0.85 or above, scores 0. ``ramp == 0`` gives the band's indicator.
    """
    if not low <= high:
        raise ValueError(f"plateau band is empty: [{low}, {high}]")
    if ramp < 0:
        raise ValueError(f"plateau ramp must be >= 0, got {ramp}")
    if not math.isfinite(x):
        raise ValueError(f"plateau of a non-finite value {x!r}")
    if low <= x <= high:
        return 1.0
    distance = low - x if x < low else x - high
    if ramp == 0:
        return 0.0
    return max(0.0, 1.0 - distance / ramp)
