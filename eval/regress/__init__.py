"""Regression gate: is a candidate run significantly worse than a reference run?"""

from spade.eval.regress._gate import GateConfig, GateResult, SuiteComparison, compare_runs
from spade.eval.regress._render import render_text
from spade.eval.regress._stats import bootstrap_ci, holm, sampling_noise_se, sign_flip_pvalue

__all__ = [
    "GateConfig",
    "GateResult",
    "SuiteComparison",
    "bootstrap_ci",
    "compare_runs",
    "holm",
    "render_text",
    "sampling_noise_se",
    "sign_flip_pvalue",
]
