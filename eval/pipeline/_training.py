"""What each trained method did while training, for the experiment's report.

A score table alone cannot tell a SPADE run whose designer wrote nothing usable from one
whose designer did the work: with too few valid designs the agent pool falls back on the
bundled seed environments. So the report shows, per trained method and summed over its
``metrics.jsonl``: the designer's validity by stage (how many designs survived each stage of
parsing, validation and the first clean plays) and how many agent plays came from designed
vs seed environments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TrainingSummary", "read_summary", "render_training"]

ORIGINS = ("designed", "seed")


@dataclass
class TrainingSummary:
    """One method's training run, summed over its steps."""

    label: str
    kind: str = "spade"  # the method's kind (base, spade, ablation, fixed_env)
    steps: int = 0
    agent_plays: int = 0
    plays_by_origin: dict[str, int] = field(default_factory=dict)  # empty: not recorded
    designs: int = 0
    valid: int = 0
    failures_by_stage: dict[str, int] = field(default_factory=dict)
    pool_generation: int = 0

    @property
    def validity_rate(self) -> float | None:
        return self.valid / self.designs if self.designs else None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "validity_rate": self.validity_rate}


def _lines(path: Path) -> list[dict[str, Any]]:
    """The metrics lines of a run, one per step (a step logged twice keeps its last line)."""
    by_step: dict[int, dict[str, Any]] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            line = json.loads(raw)
            by_step[int(line.get("step", len(by_step)))] = line
    return [by_step[k] for k in sorted(by_step)]


def _add(total: dict[str, int], part: Mapping[str, Any] | None) -> None:
    for key, value in (part or {}).items():
        total[key] = total.get(key, 0) + int(value)


def read_summary(label: str, kind: str, run_dir: Path) -> TrainingSummary | None:
    """The summary of the training run in ``run_dir`` (None before its first step)."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return None
    out = TrainingSummary(label, kind)
    for line in _lines(path):
        out.steps += 1
        agent = line.get("agent") or {}
        out.agent_plays += int(agent.get("episodes", 0))
        _add(out.plays_by_origin, agent.get("plays_by_origin"))
        out.pool_generation = max(out.pool_generation,
                                  int((line.get("pool") or {}).get("generation", 0)))
        designer = line.get("designer")
        if designer:
            out.designs += int(designer.get("designs", 0))
            out.valid += int(designer.get("valid", 0))
            _add(out.failures_by_stage, designer.get("failures_by_stage"))
    return out if out.steps else None


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _origin_cell(s: TrainingSummary, origin: str) -> str:
    if s.kind == "fixed_env":
        return f"{s.agent_plays} (fixed pool)" if origin == "seed" else "-"
    if not s.plays_by_origin:
        return "not recorded"
    n = s.plays_by_origin.get(origin, 0)
    return f"{n} ({_pct(n, s.agent_plays)})"


def _overview(summaries: Sequence[TrainingSummary]) -> list[str]:
    rows = ["| method | steps | agent plays | on designed envs | on seed envs | designs "
            "| valid | validity | pool generations |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summaries:
        rate = "n/a" if s.validity_rate is None else f"{100 * s.validity_rate:.1f}%"
        rows.append(f"| {s.label} | {s.steps} | {s.agent_plays} | {_origin_cell(s, 'designed')} "
                    f"| {_origin_cell(s, 'seed')} | {s.designs} | {s.valid} | {rate} "
                    f"| {s.pool_generation} |")
    return rows


def _stages(s: TrainingSummary, order: Iterable[str]) -> list[str]:
    """Designs still in after each stage that rejected any (pipeline order)."""
    rows = [f"**{s.label}** ({s.designs} designs)", "",
            "| after stage | rejected there | still in | share of designs |",
            "|---|---:|---:|---:|"]
    left = s.designs
    known = list(order)
    for stage in [*known, *sorted(set(s.failures_by_stage) - set(known))]:
        failed = s.failures_by_stage.get(stage, 0)
        if failed:
            left -= failed
            rows.append(f"| {stage} | {failed} | {left} | {_pct(left, s.designs)} |")
    rows.append(f"| valid (played cleanly) | - | {s.valid} | {_pct(s.valid, s.designs)} |")
    return rows


def render_training(summaries: Sequence[TrainingSummary]) -> str:
    """The report's training section (markdown); empty without trained methods."""
    if not summaries:
        return ""
    from spade.cycle._outcome import OUTCOMES

    lines = ["## Training", "",
             "Agent plays are the agent role's own episodes; \"seed\" environments are the "
             "bundled reference environments the pool starts from (and falls back on while the "
             "designer has produced too few valid ones); a fixed-environment baseline plays "
             "only its fixed pool.", "", *_overview(summaries)]
    for s in summaries:
        if s.designs:
            lines += ["", *_stages(s, OUTCOMES)]
    return "\n".join(lines) + "\n"
