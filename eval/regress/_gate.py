"""Compare a candidate run with a reference run, suite by suite, on paired items.

The gate asks one question: is the candidate WORSE? Decision rule, per gated suite (items
present in both runs; per-item score = mean over the item's samples; d_i = candidate -
reference):
- p: one-sided paired sign-flip test of mean(d) = 0 against mean(d) < 0 (exact for <= 16
  non-zero differences, seeded Monte Carlo otherwise); p-values are Holm-adjusted across
  the gated suites;
- threshold = max(min_effect, z_(1 - alpha) * sampling SE), where the sampling SE is the
  error of mean(d) caused only by the finite samples per item (within-item variance / K).
  A drop smaller than what re-sampling the same model at these sample counts produces is
  not called a regression; with one sample per item the floor is unknown and only
  min_effect applies;
- verdict "worse" when mean(d) < 0, the Holm-adjusted p < alpha and |mean(d)| >= threshold,
  otherwise "no significant change" (an improvement is reported, never tested).
Before any statistics the candidate must be like the reference: finished, no partial
suite, at least the reference's items, the same protocol, sample count, data sha256 and
prompt template. Otherwise the gate refuses (one-line error, exit 2) unless the user
allows that difference (``allow``, recorded in the verdict). A suite the reference has but
the candidate lacks fails the gate ("missing") unless ``allow_missing``. A suite whose
reference scores below the threshold is noted as having no headroom: no candidate can be
called worse there. Suites with
repeated trials that report pass^k (tau2) get a second
comparison, "<suite> pass^k" at k = the trial count both runs share, on per-item pass^k.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from spade.eval._runs import ItemStat, Run, SuiteResult, load_item_scores
from spade.eval.regress import _stats
from spade.eval.regress._passk import gated_k, pass_k_items

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
    #: differences from the reference the user accepts (see ``ALLOWABLE``)
    allow: tuple[str, ...] = ()


#: kinds of candidate/reference differences the gate refuses unless allowed
ALLOWABLE = ("unfinished", "partial", "fewer-items", "protocol", "samples", "data", "template")


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
            "test": "one-sided paired sign-flip (is the candidate worse?), Holm across suites",
            "allowed_differences": list(self.config.allow),
            "passed": self.passed,
            "suites": [asdict(c) for c in self.comparisons],
        }


def _why(result: SuiteResult) -> str:
    """The status of a result without a score, with its reason when it is missing."""
    if result.status == "missing":
        return f"missing: {result.why_missing}"
    return f"status {result.status}"


def _suites_to_gate(ref: Run, config: GateConfig) -> tuple[list[str], list[SuiteComparison]]:
    if config.suites is None:
        gated = [s for s, r in ref.suites.items() if r.has_score]
        skipped = [
            SuiteComparison(s, SKIPPED, notes=(f"reference has no result ({_why(r)})",))
            for s, r in ref.suites.items()
            if not r.has_score
        ]
        return gated, skipped
    for suite in config.suites:
        result = ref.suites.get(suite)
        if result is None:
            raise UserError(f"suite {suite!r} is not in the reference run {ref.path}")
        if not result.has_score:
            raise UserError(f"the reference run has no result for {suite!r} ({_why(result)})")
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
    mismatched = sum(
        1
        for ri, ci in ((ref_items[i], cand_items[i]) for i in common)
        if ri.prompt_hash and ci.prompt_hash and ri.prompt_hash != ci.prompt_hash
    )
    templates = [x.suites[suite].entry.get("template_sha256") for x in (ref, cand)]
    if mismatched and None in templates:  # older runs: the prompts themselves are the evidence
        _refuse(config, "template", cand, suite,
                f"{mismatched} paired item(s) were asked with different prompts")
    if len(ref_items) > len(common):
        _refuse(config, "fewer-items", cand, suite,
                f"covers {len(common)} of the reference's {len(ref_items)} items")
    comp = compare_items(suite if k is None else f"{suite} pass^{k}", ref_items, cand_items,
                         config)
    if mismatched:
        comp = replace(comp, notes=(f"{mismatched} paired item(s) have different prompt hashes",
                                    *comp.notes))
    return comp


def compare_items(
    suite: str, ref_items: Mapping[str, ItemStat], cand_items: Mapping[str, ItemStat],
    config: GateConfig, *, n_flips: int = _stats.N_FLIPS,
) -> SuiteComparison:
    """The gate's statistics on one suite's items present in both runs (``d_i`` = candidate
    minus reference): mean difference, its bootstrap CI, the one-sided sign-flip p and the
    threshold; the verdict stays "no significant change" until :func:`decide`. Simulations
    call this with their own item statistics, so they measure the gate itself."""
    common = sorted(set(ref_items) & set(cand_items))
    if not common:
        raise UserError(f"{suite}: the two runs have no items in common")
    r = [ref_items[i] for i in common]
    c = [cand_items[i] for i in common]
    diffs = [ci.mean - ri.mean for ri, ci in zip(r, c, strict=True)]
    se = _stats.sampling_noise_se(
        [x.var for x in r], [x.n_samples for x in r], [x.var for x in c], [x.n_samples for x in c]
    )
    threshold, floor = suite_threshold(config, se)
    notes = []
    only_ref, only_cand = len(ref_items) - len(common), len(cand_items) - len(common)
    if only_ref or only_cand:
        notes.append(
            f"paired on {len(common)} items ({only_ref} only in reference, "
            f"{only_cand} only in candidate)"
        )
    ref_score = sum(x.mean for x in r) / len(r)
    if ref_score < threshold:
        notes.append(f"no headroom: the reference scores {100 * ref_score:.1f}%, below the "
                     f"smallest drop the gate calls ({100 * threshold:.1f} points), so this "
                     "suite cannot show a regression")
    return SuiteComparison(
        suite=suite,
        verdict=SAME,
        n_paired=len(common),
        n_reference_only=only_ref,
        n_candidate_only=only_cand,
        reference_score=ref_score,
        candidate_score=sum(x.mean for x in c) / len(c),
        delta=sum(diffs) / len(diffs),
        ci95=_stats.bootstrap_ci(diffs, seed=config.seed),
        p_value=_stats.sign_flip_pvalue(diffs, n_flips=n_flips, seed=config.seed,
                                        alternative="less"),
        threshold=threshold,
        noise_floor=floor,
        samples=(
            int(statistics.median(x.n_samples for x in r)),
            int(statistics.median(x.n_samples for x in c)),
        ),
        notes=tuple(notes),
    )


def suite_threshold(config: GateConfig, se: float | None) -> tuple[float, float | None]:
    """``(threshold, noise floor)``: the smallest drop called a regression is ``min_effect``
    or z_(1 - alpha) x the sampling SE of the mean difference, whichever is larger (the
    floor is ``None``, unknown, with one sample per item)."""
    floor = None if se is None else statistics.NormalDist().inv_cdf(1 - config.alpha) * se
    return max(config.min_effect, floor or 0.0), floor


def is_worse(delta: float, p: float, threshold: float, alpha: float) -> bool:
    """The decision rule: a drop (``delta < 0``) that is significant (``p``, Holm-adjusted
    when several suites are gated, below ``alpha``) and at least ``threshold``."""
    return p < alpha and delta < 0 and -delta + _TOL >= threshold


def decide(compared: Sequence[SuiteComparison], alpha: float) -> list[SuiteComparison]:
    """The verdicts: p-values Holm-adjusted across ``compared``, then :func:`is_worse`."""
    adjusted = _stats.holm([1.0 if c.p_value is None else c.p_value for c in compared])
    return [_decide(c, p, alpha) for c, p in zip(compared, adjusted, strict=True)]


def _decide(comp: SuiteComparison, p_holm: float, alpha: float) -> SuiteComparison:
    delta, threshold = comp.delta or 0.0, comp.threshold or 0.0
    verdict = WORSE if is_worse(delta, p_holm, threshold, alpha) else SAME
    return SuiteComparison(**{**asdict(comp), "verdict": verdict, "p_holm": p_holm})


def _refuse(config: GateConfig, kind: str, cand: Run, suite: str | None, what: str) -> None:
    if kind in config.allow:
        return
    where = f"{suite}: " if suite else ""
    raise UserError(
        f"refusing to gate candidate {cand.path}: {where}{what} (pass --allow {kind} to "
        "gate anyway; it is recorded in the verdict)"
    )


def _protocol_view(protocol: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(protocol).items() if k not in ("name", "samples")}


def _check_like(ref: Run, cand: Run, suite: str, config: GateConfig) -> list[str]:
    """Refuse a candidate suite that differs from the reference; notes for allowed ones."""
    r, c = ref.suites[suite], cand.suites[suite]
    checks = [
        ("partial", c.status == "partial", f"the result is partial ({c.n_items} items)"),
        ("fewer-items", c.n_items < r.n_items,
         f"covers {c.n_items} items, the reference {r.n_items}"),
        ("samples", c.n_samples != r.n_samples,
         f"{c.n_samples} samples per item, the reference {r.n_samples}"),
        ("protocol", _protocol_view(c.protocol) != _protocol_view(r.protocol),
         "a different protocol (sampling, token budget, slice or suite options)"),
        ("data", c.data_sha256 != r.data_sha256, "different data files (sha256)"),
        ("template", None not in (r.entry.get("template_sha256"), c.entry.get("template_sha256"))
         and r.entry.get("template_sha256") != c.entry.get("template_sha256"),
         "a different prompt template"),
    ]
    notes = []
    for kind, differs, what in checks:
        if differs:
            _refuse(config, kind, cand, suite, what)
            notes.append(f"allowed difference ({kind}): {what}")
    return notes


def compare_runs(ref: Run, cand: Run, config: GateConfig | None = None) -> GateResult:
    """Gate ``cand`` against ``ref``; raises UserError for unusable input."""
    config = config or GateConfig()
    if not 0 < config.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {config.alpha}")
    if config.min_effect < 0:
        raise UserError(f"--min-effect must be >= 0, got {config.min_effect}")
    unknown = sorted(set(config.allow) - set(ALLOWABLE))
    if unknown:
        raise UserError(f"--allow: unknown difference {unknown[0]!r} "
                        f"(known: {', '.join(ALLOWABLE)})")
    gated, out = _suites_to_gate(ref, config)
    if not gated:
        raise UserError(f"nothing to gate: the reference run {ref.path} has no suite results")
    if not cand.finished:
        _refuse(config, "unfinished", cand, None, "the run did not finish")
    compared: list[SuiteComparison] = []
    for suite in gated:
        result = cand.suites.get(suite)
        if result is None or not result.has_score:
            status = "absent" if result is None else _why(result)
            verdict = SKIPPED if config.allow_missing else MISSING
            out.append(
                SuiteComparison(suite, verdict, notes=(f"candidate has no result ({status})",))
            )
            continue
        allowed = _check_like(ref, cand, suite, config)
        comp = _compare_suite(ref, cand, suite, config)
        compared.append(replace(comp, notes=(*allowed, *comp.notes)))
        k = gated_k(ref, cand, suite) if config.pass_k else None
        if k is not None:
            compared.append(_compare_suite(ref, cand, suite, config, k))
    decided = decide(compared, config.alpha)
    order = {s: i for i, s in enumerate(gated)}
    ordered: Sequence[SuiteComparison] = sorted(
        [*decided, *out], key=lambda c: order.get(c.suite.partition(" ")[0], len(order))
    )
    return GateResult(str(ref.path), str(cand.path), config, tuple(ordered))
