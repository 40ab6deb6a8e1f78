"""The process-wide suite registry (suites register themselves on import)."""

from __future__ import annotations

from spade.eval.suites._base import SuiteRegistry

SUITES = SuiteRegistry()
