"""A short human-readable report of a self-play run (the `nox -s demo` output).

Built only from ``metrics.jsonl`` (and the run's config), so it can be re-rendered for any
run directory. Numbers are aggregated over all cycles: validity and failures by stage over
all designs, solve rates over all played environments, regret over all valid ones.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.config import RunConfig
from spade.textfile import read_jsonl


def summarize_cycles(metrics: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Run-level aggregates of per-cycle metrics."""
    designs = sum(m["counts"]["designs"] for m in metrics)
    valid = sum(m["counts"]["valid"] for m in metrics)
    failures: Counter[str] = Counter()
    for m in metrics:
        failures.update({k: v for k, v in m["failures_by_stage"].items() if v})
    parse: Counter[str] = Counter()
    for m in metrics:
        parse.update(m.get("parse_failures", {}))

    def weighted(key: str) -> float | None:
        pairs = [(m[key], m["counts"]["valid"]) for m in metrics if m[key] is not None]
        total = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / total if total else None

    regrets = [m["regret"]["mean"] for m in metrics if m["regret"]["n"]]
    scores = [m["diversity"]["diversity_score"] for m in metrics
              if m["diversity"]["diversity_score"] is not None]
    return {
        "cycles": len(metrics),
        "designs": designs,
        "valid": valid,
        "validity_rate": valid / designs if designs else 0.0,
        "failures_by_stage": dict(failures.most_common()),
        "parse_failures": dict(parse.most_common()),
        "episodes": sum(m["counts"]["episodes"] for m in metrics),
        "solve_rate_hinted": weighted("solve_rate_hinted"),
        "solve_rate_unhinted": weighted("solve_rate_unhinted"),
        "regret_mean": (sum(m["regret"]["mean"] * m["regret"]["n"] for m in metrics
                            if m["regret"]["n"]) / valid) if valid else None,
        "regret_max": max((m["regret"]["max"] for m in metrics if m["regret"]["n"]),
                          default=None),
        "regret_cycle_means": regrets,
        "diversity_score_mean": statistics.fmean(scores) if scores else None,
        "near_duplicate_rate_max": max((m["diversity"]["near_duplicate_rate"] for m in metrics),
                                       default=None),
        "embedding_backend": metrics[-1]["diversity"]["embedding_backend"] if metrics else None,
        "designer_tokens": sum(m["counts"]["designer_tokens"] for m in metrics),
        "agent_tokens": sum(m["counts"]["agent_tokens"] for m in metrics),
        "wall_s": sum(m.get("timing_s", {}).get("cycle_s", 0.0) for m in metrics),
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def render_report(metrics: Sequence[dict[str, Any]], config: RunConfig, *,
                  title: str = "SPADE self-play run", total_wall_s: float | None = None) -> str:
    """Markdown: validity by stage, solve rates with and without hint, regret, diversity."""
    s = summarize_cycles(metrics)
    d, a = config.designer, config.agent
    lines = [
        f"# {title}", "",
        f"Policy `{config.policy.spec}` · setting `{d.setting}` · {s['cycles']} cycles × "
        f"{d.prompts_per_cycle} prompts × {d.designs_per_prompt} designs · "
        f"{a.plays_per_arm} hinted + {a.plays_per_arm} unhinted plays per valid environment "
        f"(matched seeds), up to {a.max_turns} turns · seed {config.seed}.",
        f"Self-play time {s['wall_s'] / 60:.1f} min"
        + (f" (whole command {total_wall_s / 60:.1f} min)" if total_wall_s else "") + ".", "",
        "## Validity", "",
        f"{s['valid']} of {s['designs']} designed environments were valid "
        f"({_pct(s['validity_rate'])}).", "",
        "| cycle | designs | parsed | passed validation | valid (played cleanly) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for m in metrics:
        c = m["counts"]
        lines.append(f"| {m['cycle']} | {c['designs']} | {c['parsed']} | {c['validated']} | "
                     f"{c['valid']} |")
    lines += ["", "Failures by first failed stage (all cycles):", "",
              "| stage | designs | share |", "|---|---:|---:|"]
    for stage, n in s["failures_by_stage"].items():
        lines.append(f"| {stage} | {n} | {_pct(n / s['designs'] if s['designs'] else None)} |")
    if s["parse_failures"]:
        reasons = ", ".join(f"{k}: {v}" for k, v in s["parse_failures"].items())
        lines += ["", f"Parse failures: {reasons}."]
    lines += [
        "", "## Agent", "",
        "| arm | solve rate (mean over valid envs) |", "|---|---:|",
        f"| with hint | {_pct(s['solve_rate_hinted'])} |",
        f"| without hint | {_pct(s['solve_rate_unhinted'])} |", "",
        f"{s['episodes']} episodes in total.", "",
        "## Regret", "",
        f"Mean hint-based regret over valid environments {_num(s['regret_mean'])}, "
        f"max {_num(s['regret_max'])}.", "",
        "## Diversity", "",
        f"Embedding diversity score (mean over cycles with ≥ 2 valid environments) "
        f"{_num(s['diversity_score_mean'])}; highest near-duplicate rate "
        f"{_pct(s['near_duplicate_rate_max'])}; embedding backend "
        f"`{s['embedding_backend']}`.", "",
    ]
    return "\n".join(lines)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    return read_jsonl(path)
