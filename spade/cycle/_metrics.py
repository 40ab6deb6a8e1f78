"""Per-cycle metrics: distributions, rounding, and the timing filter.

Metrics are plain JSON. Floats are rounded to 6 decimals so that the same run gives the
same bytes in every process. Every wall-clock measurement has a key ending in ``_s`` (or
``_ms``), or is a timestamp (``created``, ``updated``, ``*_at``); :func:`without_timing`
removes exactly those, which is what must be identical between an uninterrupted and a
resumed scripted run. Counts whose names merely contain "time" (the ``timeout`` stop
reason) are results, not timings, and stay.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Regret histogram bins: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0].
REGRET_BINS = tuple(round(0.1 * i, 1) for i in range(11))


def round_floats(value: Any, digits: int = 6) -> Any:
    """``value`` with every float rounded (recursively through dicts and lists)."""
    if isinstance(value, float):
        return round(value, digits) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): round_floats(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_floats(v, digits) for v in value]
    return value


#: timestamp keys: when something happened, not what happened
TIMESTAMP_KEYS = frozenset({"created", "updated", "timestamp", "started", "finished_at"})


def is_timing_key(key: str) -> bool:
    return key.endswith(("_s", "_ms", "_at")) or key in TIMESTAMP_KEYS


def without_timing(value: Any) -> Any:
    """``value`` without timing fields, at any depth."""
    if isinstance(value, Mapping):
        return {k: without_timing(v) for k, v in value.items() if not is_timing_key(str(k))}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def distribution(values: Sequence[float]) -> dict[str, Any]:
    """n, mean, median, min, max and a histogram over :data:`REGRET_BINS` (values in [0, 1])."""
    counts = [0] * (len(REGRET_BINS) - 1)
    for v in values:
        counts[min(len(counts) - 1, max(0, int(v * 10 + 1e-9)))] += 1
    return {
        "n": len(values),
        "mean": statistics.fmean(values) if values else None,
        "median": statistics.median(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "histogram": {"bins": list(REGRET_BINS), "counts": counts},
    }


def mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def counts(items: Iterable[str], order: Sequence[str] = ()) -> dict[str, int]:
    """Counts keyed in a stable order: ``order`` first (zeros kept), then the rest sorted."""
    found = Counter(items)
    out = {k: found.get(k, 0) for k in order}
    for key in sorted(found):
        out.setdefault(key, found[key])
    return out


def rates(table: Mapping[str, int], total: int) -> dict[str, float]:
    return {k: (v / total if total else 0.0) for k, v in table.items()}
