"""Paired statistics for the regression gate.

- ``sign_flip_pvalue``: paired randomisation test of "no difference" on per-item
  differences. Under the null each difference is as likely to be negative as positive, so
  its sign is flipped. ``alternative="less"`` (the gate's question: is the candidate
  worse?) counts patterns whose sum is at most the observed one; ``"two-sided"`` compares
  absolute sums. Exact (all 2^m sign patterns of the m non-zero differences) when
  m <= ``EXACT_MAX``; otherwise ``n_flips`` random patterns from a seeded generator with the
  (1 + hits) / (1 + flips) estimate, which is a valid p-value.
- ``bootstrap_ci``: percentile bootstrap CI of the mean difference (items resampled, seeded).
- ``holm``: Holm's step-down adjustment across the gated suites (controls the family-wise
  error rate without assuming independence between suites).
- ``sampling_noise_se``: standard error of the mean difference due only to the finite number
  of samples per item (within-item variance / samples); the gate's per-suite noise floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

EXACT_MAX = 16
N_FLIPS = 20_000
N_BOOTSTRAP = 2_000
_CHUNK = 2_000
_REL_TOL = 1e-9


def sign_flip_pvalue(
    diffs: Sequence[float],
    *,
    n_flips: int = N_FLIPS,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
    alternative: str = "two-sided",
) -> float:
    """p-value for mean(diffs) == 0 under random sign flips (``"less"``: against < 0)."""
    if alternative not in ("two-sided", "less"):
        raise ValueError(f"alternative must be 'two-sided' or 'less', not {alternative!r}")
    d = np.asarray(diffs, dtype=float)
    d = d[np.abs(d) > 1e-12]
    m = d.size
    if m == 0:
        return 1.0
    one_sided = alternative == "less"
    observed = d.sum() if one_sided else abs(d.sum())
    # "as extreme": at or below the observed sum (one-sided), at or above |sum| (two-sided)
    slack = _REL_TOL * max(1.0, abs(observed))

    def extreme(sums: np.ndarray) -> np.ndarray:
        return sums <= observed + slack if one_sided else np.abs(sums) >= observed - slack

    if m <= exact_max:
        patterns = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
        return float(np.mean(extreme((2 * patterns - 1) @ d)))
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    while done < n_flips:
        size = min(_CHUNK, n_flips - done)
        signs = rng.integers(0, 2, size=(size, m)) * 2 - 1
        hits += int(np.count_nonzero(extreme(signs @ d)))
        done += size
    return (1 + hits) / (1 + n_flips)


def bootstrap_ci(
    diffs: Sequence[float], *, level: float = 0.95, n_boot: int = N_BOOTSTRAP, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean paired difference."""
    d = np.asarray(diffs, dtype=float)
    if d.size == 0:
        raise ValueError("bootstrap_ci needs at least one difference")
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for start in range(0, n_boot, _CHUNK):
        size = min(_CHUNK, n_boot - start)
        idx = rng.integers(0, d.size, size=(size, d.size))
        means[start : start + size] = d[idx].mean(axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (same order as given), monotone and capped at 1."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    k = len(pvalues)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def sampling_noise_se(
    ref_var: Sequence[float | None],
    ref_k: Sequence[int],
    cand_var: Sequence[float | None],
    cand_k: Sequence[int],
) -> float | None:
    """SE of the paired mean difference from within-item sampling alone.

    ``var`` is an item's unbiased variance over its samples (None with one sample). With one
    sample per item the within-item variance cannot be estimated, so the result is None and
    the paired test alone decides.
    """
    n = len(ref_k)
    if n == 0 or any(v is None for v in (*ref_var, *cand_var)):
        return None
    total = sum(
        (rv or 0.0) / rk + (cv or 0.0) / ck
        for rv, rk, cv, ck in zip(ref_var, ref_k, cand_var, cand_k, strict=True)
    )
    return math.sqrt(total) / n
