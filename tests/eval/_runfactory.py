"""Write evaluation run directories exactly as the results contract lays them out.

Used where a test needs a controlled score pattern (regression statistics, pooling); tests
of real behaviour also render directories produced by the real `spade eval run`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: item id -> sample scores
Items = Mapping[str, Sequence[float]]


def suite_entry(
    suite: str,
    items: Items,
    *,
    categories: Mapping[str, str] | None = None,
    comparable: bool = True,
    status: str = "ok",
) -> dict[str, Any]:
    means = [sum(s) / len(s) for s in items.values()]
    n = len(means)
    score = sum(means) / n
    sd = math.sqrt(sum((m - score) ** 2 for m in means) / (n - 1)) if n > 1 else 0.0
    se = sd / math.sqrt(n)
    k = max(len(s) for s in items.values())
    entry: dict[str, Any] = {
        "status": status,
        "score": score,
        "stderr": se,
        "ci95": [max(0.0, score - 1.96 * se), min(1.0, score + 1.96 * se)],
        "n_items": n,
        "n_samples": k,
        "metric": f"avg@{k}",
        "protocol": {"name": "paper", "samples": k, "limit": None, "temperature": 1.0},
        "data": [{"path": f"{suite}.jsonl", "sha256": "0" * 64}],
        "comparable": comparable,
        "timing_s": 0.1,
    }
    if categories:
        cats: dict[str, list[float]] = {}
        for item, mean in zip(items, means, strict=True):
            cats.setdefault(categories[item], []).append(mean)
        entry["categories"] = {
            name: {"score": sum(v) / len(v), "stderr": 0.01, "n_items": len(v)}
            for name, v in cats.items()
        }
    return entry


def write_run(
    root: Path,
    name: str,
    suites: Mapping[str, Items],
    *,
    method: str | None = None,
    seed: int = 0,
    extra_suites: Mapping[str, dict[str, Any]] | None = None,
    categories: Mapping[str, Mapping[str, str]] | None = None,
    comparable: bool = True,
    top: Mapping[str, Any] | None = None,
) -> Path:
    """Create ``root/name`` with results.json and samples/<suite>.jsonl; return the path."""
    out = root / name
    (out / "samples").mkdir(parents=True)
    entries: dict[str, Any] = {}
    for suite, items in suites.items():
        entries[suite] = suite_entry(
            suite, items, categories=(categories or {}).get(suite), comparable=comparable
        )
        with (out / "samples" / f"{suite}.jsonl").open("w") as fh:
            for item, scores in items.items():
                for i, score in enumerate(scores):
                    rec = {
                        "suite": suite,
                        "id": item,
                        "sample": i,
                        "prompt_hash": f"h-{item}",
                        "completion": "...",
                        "extracted": None,
                        "score": score,
                    }
                    fh.write(json.dumps(rec) + "\n")
    entries.update(extra_suites or {})
    doc = {
        "schema_version": 1,
        "run_id": name,
        "created": "2026-01-01T00:00:00+00:00",
        "finished": True,
        "model": {"spec": f"hf:{name}", "name": name, "sha256": None},
        "method": method or name,
        "code_version": {"spade": "0.1.0", "git_commit": None, "git_dirty": False},
        "seed": seed,
        "suites": entries,
        **(top or {}),
    }
    (out / "results.json").write_text(json.dumps(doc, indent=2))
    return out
