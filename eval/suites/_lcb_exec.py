"""Grading LiveCodeBench programs in :mod:`spade.sandbox`, as the official runner does.

The model's program is embedded in a small harness environment (a template file) and
loaded into a sandbox worker; each test is one ``step``. Rules (official runner):

- every test must pass; grading stops at the first failure;
- each test has a wall-clock limit (``per_test_timeout_s``, 6 s) enforced by the sandbox,
  and the problem as a whole ``(per_test + 1) * n_tests + 5`` seconds;
- stdin tests: the program runs as ``__main__`` with the input on stdin; output and
  expected output are compared line by line after stripping the whole text and each
  line; lines that differ as text still match if both parse as the same list of decimals;
- functional tests: ``Solution().<func_name>(*args)`` with one JSON value per input
  line, the result (tuples as lists) compared with the JSON-decoded expected output.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from spade.sandbox import EnvFault, Sandbox, SandboxLimits

TEMPLATES = Path(__file__).with_name("templates")


@dataclass(frozen=True)
class TestOutcome:
    passed: bool
    n_passed: int
    n_tests: int
    reason: str  # "ok" | "wrong_answer" | "runtime_error" | "timeout" | "compile_error" | ...

    def as_details(self) -> dict[str, Any]:
        return {"passed_tests": self.n_passed, "n_tests": self.n_tests, "reason": self.reason}


def harness_source(program: str, mode: str, func_name: str | None) -> str:
    tmpl = (TEMPLATES / "lcb_harness.py.tmpl").read_text(encoding="utf-8")
    prelude = (TEMPLATES / "lcb_prelude.py.tmpl").read_text(encoding="utf-8")
    fields = {"program": repr(program), "prelude": repr(prelude), "mode": repr(mode),
              "func_name": repr(func_name)}
    for k, v in fields.items():
        tmpl = tmpl.replace("{" + k + "}", v, 1)
    return tmpl


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(tok) for tok in line.split()]
    except InvalidOperation:
        return None


def stdout_matches(got: str, expected: str) -> bool:
    a, b = _lines(got), _lines(expected)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        dx, dy = _decimals(x), _decimals(y)
        if dx is None or dy is None or dx != dy:
            return False
    return True


def result_matches(got: str, expected: str) -> bool:
    try:
        return bool(json.loads(got) == json.loads(expected))
    except json.JSONDecodeError:
        return False


def make_sandbox(per_test_timeout_s: float) -> Sandbox:
    limits = SandboxLimits(
        memory_mb=4096, cpu_s=600, call_timeout_s=per_test_timeout_s,
        load_timeout_s=per_test_timeout_s + 4.0, max_response_bytes=64 << 20,
    )
    return Sandbox("bwrap", limits)


def grade(
    sandbox: Sandbox,
    program: str,
    tests: list[dict[str, Any]],
    func_name: str | None,
    per_test_timeout_s: float = 6.0,
) -> TestOutcome:
    """Run ``program`` against ``tests`` (all of one testtype) and return the verdict."""
    n = len(tests)
    if n == 0:
        return TestOutcome(False, 0, 0, "no_tests")
    mode = tests[0]["testtype"]
    if mode == "functional" and not func_name:
        return TestOutcome(False, 0, n, "no_function_name")
    deadline = time.monotonic() + (per_test_timeout_s + 1) * n + 5
    try:
        handle = sandbox.load(harness_source(program, mode, func_name), filename="<lcb>")
    except EnvFault as fault:
        return TestOutcome(False, 0, n, "timeout" if fault.kind == "timeout" else "compile_error")
    passed = 0
    try:
        for test in tests:
            if time.monotonic() > deadline:
                return TestOutcome(False, passed, n, "global_timeout")
            try:
                obs = handle.step(test["input"])[0]
            except EnvFault as fault:
                reason = {"timeout": "timeout", "violation": "violation"}.get(
                    str(fault.kind), "runtime_error")
                return TestOutcome(False, passed, n, reason)
            ok = (stdout_matches if mode == "stdin" else result_matches)(str(obs), test["output"])
            if not ok:
                return TestOutcome(False, passed, n, "wrong_answer")
            passed += 1
    finally:
        handle.close()
    return TestOutcome(True, passed, n, "ok")
