"""Equivalence of a math answer with a reference: integer compare first, math-verify second."""

from __future__ import annotations

from functools import cache
from typing import Any

from spade.eval.suites._extract import as_integer


@cache
def _math_verify() -> tuple[Any, Any]:
    from math_verify import parse, verify

    return parse, verify


def equivalent(extracted: str, reference: str) -> tuple[bool, str]:
    """(equal, how): ``how`` is "integer", "math-verify" or "none" (unparseable)."""
    a, b = as_integer(extracted), as_integer(reference)
    if a is not None and b is not None:
        return a == b, "integer"
    parse, verify = _math_verify()
    try:
        gold = parse(f"${reference}$")
        pred = parse(f"${extracted}$")
    except Exception:  # math-verify raises on malformed LaTeX; that is a wrong answer
        return False, "none"
    if not gold or not pred:
        return False, "none"
    try:
        return bool(verify(gold, pred)), "math-verify"
    except Exception:
        return False, "none"
