"""SPADE's evaluation harness: suites, model providers, the run store, reports.

``spade eval run`` is the entry point (``spade.eval.cli``); :func:`run_eval` is the library
call. Importing ``eval`` is cheap: suites and providers load their heavy dependencies
(torch, vllm, reasoning-gym, math-verify, the sandbox) only when used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EvalConfig", "run_eval"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from spade.eval import _runner

        return getattr(_runner, name)
    raise AttributeError(name)
