"""Grading LiveCodeBench programs in :mod:`spade.sandbox`, as the official runner does.

The model's program is embedded in a small harness environment (a template file) and
loaded into a sandbox worker; each test is one ``step``. Rules (official runner):

- every test must pass; grading stops at the first failure;
- each test has a wall-clock limit (``per_test_timeout_s``, 6 s) enforced by the sandbox,
  and the problem as a whole ``(per_test + 1) * n_tests + 5`` seconds;
- stdin tests: the program runs as ``__main__`` with the input on stdin (a real text
  stream over bytes, so ``sys.stdin.buffer`` works, as does ``sys.stdout.buffer``); like
  the official harness, the program's top-level statements are wrapped in one function
  (imports hoisted), so its variables are fast locals rather than module globals (about
  3x faster loops, which matters near the time limit). A program that declares
  ``global``/``nonlocal`` names, or that the wrapping would not compile, runs as written;
  output and expected output are compared line by line after stripping the whole text
  and each line; lines that differ as text still match if both parse as the same list of
  decimals;
- functional tests: ``Solution().<func_name>(*args)`` with one JSON value per input
  line, the result (tuples as lists, numpy scalars and arrays as Python values, which
  the official runner's ``==`` accepts) compared with the JSON-decoded expected output.
"""

from __future__ import annotations

import ast
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


WRAPPER = "wrapped_function"


def wrap_program(program: str) -> str:
    """The program with its top-level statements moved into one function that is then
    called, imports kept at the top (the official harness's stdin wrapping).

    Only parses and re-prints the text (nothing is executed here); anything unusual keeps
    the program as written.
    """
    try:
        tree = ast.parse(program)
        if any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(tree)):
            return program
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        rest = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
        if not rest:
            return program
        shell = ast.parse(f"def {WRAPPER}():\n    pass\n{WRAPPER}()\n")  # any Python version
        func, call = shell.body
        assert isinstance(func, ast.FunctionDef)
        func.body = rest
        module = ast.fix_missing_locations(ast.Module([*imports, func, call], type_ignores=[]))
        wrapped = ast.unparse(module)
        compile(wrapped, "<solution>", "exec")  # e.g. a nested star import: keep as written
        return wrapped
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return program


def harness_source(program: str, mode: str, func_name: str | None) -> str:
    tmpl = (TEMPLATES / "lcb_harness.py.tmpl").read_text(encoding="utf-8")
    prelude = (TEMPLATES / "lcb_prelude.py.tmpl").read_text(encoding="utf-8")
    if mode == "stdin":
        program = wrap_program(program)
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
