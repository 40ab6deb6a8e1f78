"""Cross-check against lm-eval: its AIME/GPQA tasks on our local data and model.

``python -m eval.crosscheck --suites aime24 --limit 3 --max-tokens 32 --out DIR`` runs
lm-eval (task YAMLs generated over the shared data files, nothing downloaded), scores its
completions with our harness, runs our harness on the same items, and writes
``DIR/report.json``. Needs the ``crosscheck`` extra (lm-eval).
"""

from __future__ import annotations

from spade.eval.crosscheck._lmeval import (
    ItemComparison,
    LmRun,
    LmSample,
    compare,
    load_lm,
    run_lmeval,
    summarize_comparisons,
)
from spade.eval.crosscheck._run import crosscheck
from spade.eval.crosscheck._tasks import FLAVOURS, SUPPORTED, LocalTask, write_task

__all__ = [
    "FLAVOURS",
    "SUPPORTED",
    "ItemComparison",
    "LmRun",
    "LmSample",
    "LocalTask",
    "compare",
    "crosscheck",
    "load_lm",
    "run_lmeval",
    "summarize_comparisons",
    "write_task",
]
