"""Benchmark suites: each registers itself under its id (``aime24``, ``gpqa_diamond``, ...)."""

from __future__ import annotations

from eval.suites import aime, gpqa, livecodebench, reasoning_gym  # noqa: F401  (registration)
from eval.suites._base import (
    AgenticSuite,
    Item,
    Loaded,
    OracleUnavailable,
    Scored,
    SingleTurnSuite,
)
from eval.suites._registry import SUITES
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
