"""Human-readable regression-gate report (the JSON form is GateResult.to_json)."""

from __future__ import annotations

from spade.eval.regress._gate import BETTER, MISSING, WORSE, GateResult, SuiteComparison

_HEAD = (
    "suite",
    "ref %",
    "cand %",
    "Δ pts",
    "95% CI (pts)",
    "p",
    "p Holm",
    "thr pts",
    "n",
    "K",
    "verdict",
)


def _pct(x: float | None, sign: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"


def _p(x: float | None) -> str:
    return "-" if x is None else (f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}")


def _row(c: SuiteComparison) -> tuple[str, ...]:
    ci = "-" if c.ci95 is None else f"[{_pct(c.ci95[0], True)}, {_pct(c.ci95[1], True)}]"
    k = "-" if c.samples is None else f"{c.samples[0]}/{c.samples[1]}"
    verdict = c.verdict.upper() if c.verdict in (WORSE, MISSING, BETTER) else c.verdict
    return (
        c.suite,
        _pct(c.reference_score),
        _pct(c.candidate_score),
        _pct(c.delta, True),
        ci,
        _p(c.p_value),
        _p(c.p_holm),
        _pct(c.threshold),
        str(c.n_paired) if c.n_paired else "-",
        k,
        verdict,
    )


def render_text(result: GateResult) -> str:
    cfg = result.config
    n_tested = sum(1 for c in result.comparisons if c.p_value is not None)
    lines = [
        f"reference: {result.reference}",
        f"candidate: {result.candidate}",
        f"paired sign-flip test per suite, alpha {cfg.alpha} with Holm over {n_tested} suite(s); "
        f"threshold = max(min effect {100 * cfg.min_effect:.1f} pts, sampling-noise floor)",
        "",
    ]
    rows = [_HEAD, *(_row(c) for c in result.comparisons)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    for r in rows:
        lines.append(
            "  ".join(
                cell.ljust(w) if i in (0, 10) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
    notes = [f"{c.suite}: {n}" for c in result.comparisons for n in c.notes]
    if notes:
        lines += ["", *(f"note: {n}" for n in notes)]
    lines.append("")
    if result.passed:
        lines.append("PASS: no gated suite is significantly worse")
    else:
        failing = ", ".join(
            f"{c.suite} ({'missing' if c.verdict == MISSING else _pct(c.delta, True) + ' pts'})"
            for c in result.failing
        )
        lines.append(f"FAIL: candidate is worse on {failing}")
    return "\n".join(lines) + "\n"
