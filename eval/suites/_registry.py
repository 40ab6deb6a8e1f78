"""The process-wide suite registry (suites register themselves on import)."""

from __future__ import annotations

from eval.suites._base import SuiteRegistry

SUITES = SuiteRegistry()
