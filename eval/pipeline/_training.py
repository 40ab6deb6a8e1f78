"""What each trained method did while training, for the experiment's report.

A score table alone cannot tell a SPADE run whose designer wrote nothing usable from one
whose designer did the work: with too few valid designs the agent pool falls back on the
bundled starter environments. So the report shows, per trained method and summed over its
``metrics.jsonl``: the designer's validity by stage (how many designs survived each stage of
parsing, validation and the first clean plays), how many agent plays came from designed
vs starter environments, and which share of each role's GRPO groups had any gradient at all
(``variance_share``: groups whose advantages are not all zero). ``heldout_slices`` is filled
when the experiment scored held-out slices on base and final checkpoints: per slice, a
one-sided paired test of final > base (:func:`paired_p_value`); ``heldout`` is the first.
:func:`plot_dynamics` draws the per-step view of the same lines (``training_dynamics.png``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spade.textfile import read_jsonl

__all__ = ["ROLES", "TrainingSummary", "heldout", "paired_p_value", "plot_dynamics",
           "read_summary", "render_training"]

ORIGINS = ("designed", "starter")
#: What ``starter`` was called in metrics written before it was named so.
_OLD_NAMES = {"seed": "starter"}
ROLES = ("designer", "agent")


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
    #: valid designs that are near-copies of a bundled starter-family module (warm-start data)
    starter_near_copies: int = 0
    failures_by_stage: dict[str, int] = field(default_factory=dict)
    pool_generation: int = 0
    #: role -> [GRPO groups, groups whose advantages were all zero], summed over the run.
    groups: dict[str, list[int]] = field(default_factory=dict)
    #: {"suite", "base", "final", "p_value", ...} of the first held-out slice, when scored.
    heldout: dict[str, Any] | None = None
    #: the same record for every held-out slice, in the experiment's order
    heldout_slices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def slice_records(self) -> list[dict[str, Any]]:
        """Every held-out slice's record (``heldout`` alone where only it is set)."""
        return self.heldout_slices or ([self.heldout] if self.heldout else [])

    @property
    def validity_rate(self) -> float | None:
        return self.valid / self.designs if self.designs else None

    @property
    def near_copy_share(self) -> float | None:
        """Share of the valid designs that are near-copies of the warm-start material."""
        return self.starter_near_copies / self.valid if self.valid else None

    @property
    def variance_share(self) -> dict[str, float | None]:
        """role -> share of its GRPO groups with a non-zero advantage (None: no groups)."""
        out: dict[str, float | None] = {}
        for role in ROLES:
            n, zero = self.groups.get(role, [0, 0])
            out[role] = (n - zero) / n if n else None
        return out

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("groups")
        return {**data, "validity_rate": self.validity_rate,
                "near_copy_share": self.near_copy_share,
                "variance_share": self.variance_share}


def _lines(path: Path) -> list[dict[str, Any]]:
    """The metrics lines of a run, one per step (a step logged twice keeps its last line)."""
    by_step: dict[int, dict[str, Any]] = {}
    for line in read_jsonl(path):
        by_step[int(line.get("step", len(by_step)))] = line
    return [by_step[k] for k in sorted(by_step)]


def _origins(part: Mapping[str, Any] | None) -> dict[str, Any]:
    """An origin-keyed block with old origin names read as today's."""
    return {_OLD_NAMES.get(k, k): v for k, v in (part or {}).items()}


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
        _add(out.plays_by_origin, _origins(agent.get("plays_by_origin")))
        out.pool_generation = max(out.pool_generation,
                                  int((line.get("pool") or {}).get("generation", 0)))
        for role in ROLES:
            stats = (line.get("zero_variance") or {}).get(role) or {}
            total = out.groups.setdefault(role, [0, 0])
            total[0] += int(stats.get("n_groups", 0))
            total[1] += int(stats.get("n_zero_variance", 0))
        designer = line.get("designer")
        if designer:
            out.designs += int(designer.get("designs", 0))
            out.valid += int(designer.get("valid", 0))
            out.starter_near_copies += int(designer.get("starter_near_copies", 0))
            _add(out.failures_by_stage, designer.get("failures_by_stage"))
    return out if out.steps else None


def paired_p_value(base: Sequence[float], final: Sequence[float]) -> float:
    """One-sided p-value of "final scores above base" over paired items: the exact
    sign-flip (permutation) test of the mean difference. Items scored alike carry no
    information; with more than 20 differing items the flips are enumerated over a seeded
    sample of 20,000 (deterministic)."""
    import itertools
    import random

    if len(base) != len(final):
        raise ValueError(f"paired test: {len(base)} base scores vs {len(final)} final scores")
    diffs = [f - b for b, f in zip(base, final, strict=True) if f != b]
    if not diffs:
        return 1.0
    observed = sum(diffs)
    if len(diffs) <= 20:
        signs: Iterable[Sequence[int]] = itertools.product((1, -1), repeat=len(diffs))
        total = 2 ** len(diffs)
    else:
        rng = random.Random(0)
        total = 20_000
        signs = ([rng.choice((1, -1)) for _ in diffs] for _ in range(total))
    hits = sum(1 for sign in signs
               if sum(s * d for s, d in zip(sign, diffs, strict=True)) >= observed - 1e-12)
    return hits / total


def heldout(suite: str, base: Sequence[float], final: Sequence[float]) -> dict[str, Any]:
    """The ``heldout`` record: mean scores of base and final on one slice, and the p-value."""
    if not base:
        raise ValueError("heldout: no scored items")
    return {"suite": suite, "items": len(base), "base": sum(base) / len(base),
            "final": sum(final) / len(final), "p_value": paired_p_value(base, final)}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _origin_cell(s: TrainingSummary, origin: str) -> str:
    if s.kind == "fixed_env":
        return f"{s.agent_plays} (fixed pool)" if origin == "starter" else "-"
    if not s.plays_by_origin:
        return "not recorded"
    n = s.plays_by_origin.get(origin, 0)
    return f"{n} ({_pct(n, s.agent_plays)})"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _overview(summaries: Sequence[TrainingSummary]) -> list[str]:
    rows = ["| method | steps | agent plays | on designed envs | on starter envs | designs "
            "| valid | validity | valid near-copies of starters | pool generations "
            "| designer groups with gradient | agent groups with gradient |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summaries:
        share = s.variance_share
        rows.append(f"| {s.label} | {s.steps} | {s.agent_plays} | {_origin_cell(s, 'designed')} "
                    f"| {_origin_cell(s, 'starter')} | {s.designs} | {s.valid} "
                    f"| {_share(s.validity_rate)} | {_share(s.near_copy_share)} "
                    f"| {s.pool_generation} "
                    f"| {_share(share['designer'])} | {_share(share['agent'])} |")
    return rows


def _heldout_rows(summaries: Sequence[TrainingSummary]) -> list[str]:
    """One row per method and held-out slice."""
    scored = [(s, h) for s in summaries for h in s.slice_records]
    if not scored:
        return []
    rows = ["", "Held-out slices (never trained on): base vs final checkpoint, one-sided "
            "paired sign-flip test of final > base.", "",
            "| method | suite | items | base | final | p | by training step |",
            "|---|---|---:|---:|---:|---:|---|"]
    for s, h in scored:
        curve = ", ".join(f"{p['step']}: {p['score']:.3f}" for p in h.get("curve", []))
        rows.append(f"| {s.label} | {h['suite']} | {h.get('items', '')} | {h['base']:.3f} "
                    f"| {h['final']:.3f} | {h['p_value']:.4f} | {curve or '-'} |")
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
             "Agent plays are the agent role's own episodes; \"starter\" environments are the "
             "bundled reference environments the pool starts from (and falls back on while the "
             "designer has produced too few valid ones); a fixed-environment baseline plays "
             "only its fixed pool. A role's groups \"with gradient\" are its GRPO groups whose "
             "advantages are not all zero.", "", *_overview(summaries),
             *_heldout_rows(summaries)]
    for s in summaries:
        if s.designs:
            lines += ["", *_stages(s, OUTCOMES)]
    return "\n".join(lines) + "\n"


def _dynamics(path: Path) -> dict[str, list[Any]]:
    """Per-step series of one run's metrics lines (None where a step has no value)."""
    series: dict[str, list[Any]] = {k: [] for k in (
        "step", "stages", "validity", "reward_mean", "reward_min", "reward_max",
        "regret_mean", "regret_min", "regret_max", "solve_designed", "solve_starter",
        "share_designer", "share_agent")}
    for line in _lines(path):
        designer = line.get("designer") or {}
        regret = designer.get("regret") or {}
        solve = _origins((line.get("agent") or {}).get("solve_rate_by_origin"))
        zero = line.get("zero_variance") or {}
        series["step"].append(int(line.get("step", 0)))
        series["stages"].append({**(designer.get("failures_by_stage") or {}),
                                 "valid": designer.get("valid", 0)} if designer else {})
        series["validity"].append(designer.get("validity_rate"))
        for key in ("reward_mean", "reward_min", "reward_max"):
            series[key].append(designer.get(key))
        for key in ("mean", "min", "max"):
            series[f"regret_{key}"].append(regret.get(key))
        series["solve_designed"].append(solve.get("designed"))
        series["solve_starter"].append(solve.get("starter"))
        for role in ROLES:
            stats = zero.get(role) or {}
            n = int(stats.get("n_groups", 0))
            series[f"share_{role}"].append(
                (n - int(stats.get("n_zero_variance", 0))) / n if n else None)
    return series


def _points(steps: Sequence[int], values: Sequence[Any]) -> tuple[list[int], list[float]]:
    kept = [(s, float(v)) for s, v in zip(steps, values, strict=True) if v is not None]
    return [s for s, _ in kept], [v for _, v in kept]


def plot_dynamics(runs: Sequence[tuple[str, Path]], out: Path) -> bool:
    """``training_dynamics.png``: per step of each (label, run dir) -- designs by validator
    stage, validity rate, designer reward and regret (mean with min-max band), agent solve
    rate on designed vs starter environments, and each role's share of groups with gradient.
    Returns False (writing nothing) when no run has metrics yet."""
    data = [(label, _dynamics(d / "metrics.jsonl")) for label, d in runs
            if (d / "metrics.jsonl").is_file()]
    data = [(label, s) for label, s in data if s["step"]]
    if not data:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(data), 5, figsize=(22, 3.6 * len(data)), squeeze=False)
    for row, (label, s) in zip(axes, data, strict=True):
        steps = s["step"]
        stages = [*sorted({k for st in s["stages"] for k in st} - {"valid"}), "valid"]
        bottom = [0.0] * len(steps)
        colours = plt.get_cmap("tab20")  # up to 20 stages, each its own colour
        for k, stage in enumerate(stages):
            heights = [float(st.get(stage, 0)) for st in s["stages"]]
            row[0].bar(steps, heights, bottom=bottom, label=stage, color=colours(k % 20))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        row[0].set_title(f"{label}: designs by validator stage")
        if any(bottom):
            row[0].legend(fontsize=7)
        row[1].plot(*_points(steps, s["validity"]), marker="o")
        row[1].set_title("validity rate")
        row[1].set_ylim(-0.05, 1.05)
        for key, name in (("reward", "designer reward"), ("regret", "regret")):
            xs, mean = _points(steps, s[f"{key}_mean"])
            _, low = _points(steps, s[f"{key}_min"])
            _, high = _points(steps, s[f"{key}_max"])
            row[2].plot(xs, mean, marker="o", label=f"{name} (mean, min-max)")
            if len(low) == len(xs) == len(high):
                row[2].fill_between(xs, low, high, alpha=0.2)
        row[2].set_title("designer reward and regret")
        row[2].legend(fontsize=7)
        for origin in ORIGINS:
            row[3].plot(*_points(steps, s[f"solve_{origin}"]), marker="o", label=origin)
        row[3].set_title("agent solve rate by env origin")
        row[3].set_ylim(-0.05, 1.05)
        row[3].legend(fontsize=7)
        for role in ROLES:
            row[4].plot(*_points(steps, s[f"share_{role}"]), marker="o", label=role)
        row[4].set_title("groups with gradient (share)")
        row[4].set_ylim(-0.05, 1.05)
        row[4].legend(fontsize=7)
        for ax in row:
            ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return True
