"""Suite statistics: mean of per-item means, its standard error and a normal 95% interval.

Items are the unit of sampling (samples of one item are correlated), so the standard error
is the sample standard deviation of the per-item means over sqrt(n_items); with a single
item it is 0 (undefined, reported as no spread).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Summary:
    score: float
    stderr: float
    ci95: tuple[float, float]
    n: int


def summarize(item_means: Sequence[float]) -> Summary:
    n = len(item_means)
    if n == 0:
        return Summary(0.0, 0.0, (0.0, 0.0), 0)
    mean = math.fsum(item_means) / n
    var = math.fsum((x - mean) ** 2 for x in item_means) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(var / n)
    return Summary(mean, se, (max(0.0, mean - Z95 * se), min(1.0, mean + Z95 * se)), n)
