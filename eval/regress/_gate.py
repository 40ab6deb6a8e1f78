"""Compare a candidate run with a reference run, suite by suite, on paired items.

Decision rule, per gated suite (items present in both runs; per-item score = mean over the
item's samples; d_i = candidate - reference):
- p: two-sided paired sign-flip test of mean(d) = 0 (exact for <= 16 non-zero differences,
  seeded Monte Carlo otherwise); p-values are Holm-adjusted across the gated suites;
- threshold = max(min_effect, z_(1 - alpha/2) * sampling SE), where the sampling SE is the
  error of mean(d) caused only by the finite samples per item (within-item variance / K).
  A drop smaller than what re-sampling the same model at these sample counts produces is
  not called a regression; with one sample per item the floor is unknown and only
  min_effect applies;
- verdict "worse" when mean(d) < 0, the Holm-adjusted p < alpha and |mean(d)| >= threshold
  ("better" symmetrically), otherwise "no significant change".
A suite the reference has but the candidate lacks fails the gate ("missing") unless
``allow_missing``. Suites with repeated trials that report pass^k (tau2) get a second
comparison, "<suite> pass^k" at k = the trial count both runs share, on per-item pass^k.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from eval._runs import Run, load_item_scores
from eval.regress import _stats
from eval.regress._passk import gated_k, pass_k_items
from spade.errors import UserError

WORSE, BETTER, SAME, MISSING, SKIPPED = (
    "worse",
    "better",
    "no significant change",
    "missing",
    "skipped",
)
_TOL = 1e-12


@dataclass(frozen=True)
class GateConfig:
    alpha: float = 0.05
    min_effect: float = 0.01  # absolute score difference (fraction): 0.01 = one point
    seed: int = 0
    allow_missing: bool = False
    suites: tuple[str, ...] | None = None
    pass_k: bool = True  # also gate pass^k (k = trials) for suites that report it


@dataclass(frozen=True)
class SuiteComparison:
    suite: str
    verdict: str
    n_paired: int = 0
    n_reference_only: int = 0
    n_candidate_only: int = 0
    reference_score: float | None = None
    candidate_score: float | None = None
    delta: float | None = None
    ci95: tuple[float, float] | None = None
    p_value: float | None = None
    p_holm: float | None = None
    threshold: float | None = None
    noise_floor: float | None = None
    samples: tuple[int, int] | None = None  # median samples per item (reference, candidate)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateResult:
    reference: str
    candidate: str
    config: GateConfig
    comparisons: tuple[SuiteComparison, ...] = field(default_factory=tuple)

    @property
    def failing(self) -> list[SuiteComparison]:
        return [c for c in self.comparisons if c.verdict in (WORSE, MISSING)]

    @property
    def passed(self) -> bool:
        return not self.failing

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "candidate": self.candidate,
            "config": asdict(self.config),
            "passed": self.passed,
            "suites": [asdict(c) for c in self.comparisons],
        }


def _suites_to_gate(ref: Run, config: GateConfig) -> tuple[list[str], list[SuiteComparison]]:
    if config.suites is None:
        gated = [s for s, r in ref.suites.items() if r.has_score]
        skipped = [
            SuiteComparison(s, SKIPPED, notes=(f"reference has no result (status {r.status})",))
            for s, r in ref.suites.items()
            if not r.has_score
        ]
        return gated, skipped
    for suite in config.suites:
        result = ref.suites.get(suite)
        if result is None:
            raise UserError(f"suite {suite!r} is not in the reference run {ref.path}")
        if not result.has_score:
            raise UserError(f"the reference run has no result for {suite!r} ({result.status})")
    return list(config.suites), []


def _compare_suite(
    ref: Run, cand: Run, suite: str, config: GateConfig, k: int | None = None
) -> SuiteComparison:
    """Pair per-item means over trials; with ``k``, per-item pass^k (named "suite pass^k")."""
    if k is None:
        ref_items, cand_items = load_item_scores(ref, suite), load_item_scores(cand, suite)
    else:
        ref_items, cand_items = pass_k_items(ref, suite, k), pass_k_items(cand, suite, k)
    common = sorted(set(ref_items) & set(cand_items))
    if not common:
        raise UserError(f"{suite}: the two runs have no items in common")
    r = [ref_items[i] for i in common]
    c = [cand_items[i] for i in common]
    diffs = [ci.mean - ri.mean for ri, ci in zip(r, c, strict=True)]
    delta = sum(diffs) / len(diffs)
    se = _stats.sampling_noise_se(
        [x.var for x in r], [x.n_samples for x in r], [x.var for x in c], [x.n_samples for x in c]
    )
    z = statistics.NormalDist().inv_cdf(1 - config.alpha / 2)
    floor = None if se is None else z * se
    notes = []
    mismatched = sum(
        1
        for ri, ci in zip(r, c, strict=True)
        if ri.prompt_hash and ci.prompt_hash and ri.prompt_hash != ci.prompt_hash
    )
    if mismatched:
        notes.append(f"{mismatched} paired item(s) have different prompt hashes")
    if ref.suites[suite].data_sha256 != cand.suites[suite].data_sha256:
        notes.append("data file checksums differ between the runs")
    only_ref, only_cand = len(ref_items) - len(common), len(cand_items) - len(common)
    if only_ref or only_cand:
        notes.append(
            f"paired on {len(common)} items ({only_ref} only in reference, "
            f"{only_cand} only in candidate)"
        )
    return SuiteComparison(
        suite=suite if k is None else f"{suite} pass^{k}",
        verdict=SAME,
        n_paired=len(common),
        n_reference_only=only_ref,
        n_candidate_only=only_cand,
        reference_score=sum(x.mean for x in r) / len(r),
        candidate_score=sum(x.mean for x in c) / len(c),
        delta=delta,
        ci95=_stats.bootstrap_ci(diffs, seed=config.seed),
        p_value=_stats.sign_flip_pvalue(diffs, seed=config.seed),
        threshold=max(config.min_effect, floor or 0.0),
        noise_floor=floor,
        samples=(
            int(statistics.median(x.n_samples for x in r)),
            int(statistics.median(x.n_samples for x in c)),
        ),
        notes=tuple(notes),
    )


def _decide(comp: SuiteComparison, p_holm: float, alpha: float) -> SuiteComparison:
    delta, threshold = comp.delta or 0.0, comp.threshold or 0.0
    verdict = SAME
    if p_holm < alpha and abs(delta) + _TOL >= threshold and delta != 0:
        verdict = WORSE if delta < 0 else BETTER
    return SuiteComparison(**{**asdict(comp), "verdict": verdict, "p_holm": p_holm})


def compare_runs(ref: Run, cand: Run, config: GateConfig | None = None) -> GateResult:
    """Gate ``cand`` against ``ref``; raises UserError for unusable input."""
    config = config or GateConfig()
    if not 0 < config.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {config.alpha}")
    if config.min_effect < 0:
        raise UserError(f"--min-effect must be >= 0, got {config.min_effect}")
    gated, out = _suites_to_gate(ref, config)
    if not gated:
        raise UserError(f"nothing to gate: the reference run {ref.path} has no suite results")
    compared: list[SuiteComparison] = []
    for suite in gated:
        result = cand.suites.get(suite)
        if result is None or not result.has_score:
            status = "absent" if result is None else result.status
            verdict = SKIPPED if config.allow_missing else MISSING
            out.append(
                SuiteComparison(suite, verdict, notes=(f"candidate has no result ({status})",))
            )
            continue
        compared.append(_compare_suite(ref, cand, suite, config))
        k = gated_k(ref, cand, suite) if config.pass_k else None
        if k is not None:
            compared.append(_compare_suite(ref, cand, suite, config, k))
    adjusted = _stats.holm([1.0 if c.p_value is None else c.p_value for c in compared])
    decided = [_decide(c, p, config.alpha) for c, p in zip(compared, adjusted, strict=True)]
    order = {s: i for i, s in enumerate(gated)}
    ordered: Sequence[SuiteComparison] = sorted(
        [*decided, *out], key=lambda c: order.get(c.suite.partition(" ")[0], len(order))
    )
    return GateResult(str(ref.path), str(cand.path), config, tuple(ordered))
