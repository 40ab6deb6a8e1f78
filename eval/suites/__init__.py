"""Benchmark suites: each registers itself under its id (``aime24``, ``gpqa_diamond``, ...)."""

from __future__ import annotations

from spade.eval.suites import (  # noqa: F401  (registration)
    acebench,
    aime,
    bfcl,
    families,
    gpqa,
    livecodebench,
    reasoning_gym,
    rg_easy,
    tau2,
)
from spade.eval.suites._base import (
    AgenticSuite,
    Item,
    Loaded,
    OracleUnavailable,
    Scored,
    SingleTurnSuite,
)
from spade.eval.suites._registry import SUITES

from spade.seeds import derive_seed

__all__ = [
    "SUITES",
    "AgenticSuite",
    "Item",
    "Loaded",
    "OracleUnavailable",
    "Scored",
    "SingleTurnSuite",
    "derive_seed",
]
