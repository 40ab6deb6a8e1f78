"""pass^k for suites with repeated trials per item (tau2: one item = one task).

pass^k of an item with ``c`` successes in ``n`` trials is ``C(c, k) / C(n, k)``: the chance
that k trials drawn without replacement all succeed; a suite's pass^k is the mean over its
items. pass^1 is the mean success rate, i.e. the per-item mean over trials the gate already
pairs on, so only k >= 2 adds a comparison. A trial succeeds when its score is 1 (the
benchmarks that report pass^k score each trial 0 or 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb

from spade.eval._runs import ItemStat, Run, RunError

from spade.textfile import iter_jsonl

_SUCCESS = 1.0 - 1e-9


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """``C(successes, k) / C(trials, k)``; needs 1 <= k <= trials."""
    if not 1 <= k <= trials:
        raise ValueError(f"pass^{k} needs 1 <= k <= trials ({trials})")
    return comb(successes, k) / comb(trials, k)


def item_trials(run: Run, suite: str) -> dict[str, list[float]]:
    """Scores of every trial per item (a trial recorded twice counts once: the last wins)."""
    path = run.samples_path(suite)
    if not path.is_file():
        raise RunError(f"{run.path}: suite {suite!r} has no samples file ({path.name})")
    by_item: dict[str, dict[int, float]] = {}
    for lineno, rec in iter_jsonl(path, "samples file", error=RunError):
        try:
            item, trial, score = str(rec["id"]), int(rec.get("sample", 0)), float(rec["score"])
        except (ValueError, KeyError, TypeError) as exc:
            raise RunError(f"{path}:{lineno}: not a sample record ({exc})") from exc
        by_item.setdefault(item, {})[trial] = score
    return {item: [t[i] for i in sorted(t)] for item, t in by_item.items()}


def suite_pass_k(trials: Mapping[str, Sequence[float]], k: int) -> float | None:
    """Mean over items of pass^k (None when some item has fewer than k trials)."""
    if not trials or any(len(t) < k for t in trials.values()):
        return None
    values = [pass_hat_k(sum(s >= _SUCCESS for s in t), len(t), k) for t in trials.values()]
    return sum(values) / len(values)


def pass_k_items(run: Run, suite: str, k: int) -> dict[str, ItemStat]:
    """Per-item pass^k as the gate's item statistics (items with fewer than k trials left out)."""
    out = {}
    for item, scores in item_trials(run, suite).items():
        if len(scores) >= k:
            c = sum(s >= _SUCCESS for s in scores)
            out[item] = ItemStat(pass_hat_k(c, len(scores), k), len(scores), None, None)
    return out


def binary(trials: Mapping[str, Sequence[float]]) -> bool:
    """True when every trial scored exactly 0 or 1 (pass^k is defined for such suites)."""
    return all(s in (0.0, 1.0) for t in trials.values() for s in t)


def reports_pass_k(run: Run, suite: str) -> bool:
    """Whether the run's results give pass^k for the suite (a ``pass_k`` entry or protocol key)."""
    result = run.suites.get(suite)
    if result is None:
        return False
    return bool(result.entry.get("pass_k") or result.protocol.get("pass_k"))


def gated_k(ref: Run, cand: Run, suite: str) -> int | None:
    """The k >= 2 to gate pass^k at: the largest trial count both runs have for every item.

    None when the suite does not report pass^k (no ``pass_k`` in either run's results), a
    run has non-binary trial scores, or either run has a single trial.
    """
    if not any(reports_pass_k(r, suite) for r in (ref, cand)):
        return None
    ref_t, cand_t = item_trials(ref, suite), item_trials(cand, suite)
    if not (binary(ref_t) and binary(cand_t)):
        return None
    common = set(ref_t) & set(cand_t)
    if not common:
        return None
    k = min(min(len(ref_t[i]), len(cand_t[i])) for i in common)
    return k if k >= 2 else None
