"""LiveCodeBench grading in the real sandbox, and both data formats."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import zlib
from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results, samples
from spade.eval.suites._lcb_data import decode_tests, load_official, load_public, string_from_pickle
from spade.eval.suites._lcb_exec import grade, make_sandbox, stdout_matches

from spade.errors import UserError

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CARDS_OK = """t = int(input())
for _ in range(t):
    s = input().strip()
    print("YES" if sum(a != b for a, b in zip(s, "abc")) <= 2 else "NO")
"""
CARDS_WRONG = "t = int(input())\nfor _ in range(t):\n    input()\n    print('YES')\n"
SENIORS_OK = """class Solution:
    def countSeniors(self, details: List[str]) -> int:
        return sum(int(d[11:13]) > 60 for d in details)
"""
SENIORS_WRONG = SENIORS_OK.replace("> 60", ">= 0")


@pytest.fixture(scope="module")
def problems() -> dict[str, object]:
    items = load_public(data_dir() / "livecodebench_public" / "lcb_public_tests_879.json")
    assert len(items) == 879
    return {"cards": items[0], "seniors": next(i for i in items
                                               if i.data["func_name"] == "countSeniors")}


@needs_bwrap
@pytest.mark.bwrap
def test_grading_real_problems(problems: dict) -> None:
    cards, seniors = problems["cards"], problems["seniors"]
    with make_sandbox(6.0) as sb:
        ok = grade(sb, CARDS_OK, cards.data["tests"], None)
        assert ok.passed and ok.reason == "ok"
        bad = grade(sb, CARDS_WRONG, cards.data["tests"], None)
        assert not bad.passed and bad.reason == "wrong_answer"
        assert grade(sb, SENIORS_OK, seniors.data["tests"], "countSeniors").passed
        wrong = grade(sb, SENIORS_WRONG, seniors.data["tests"], "countSeniors")
        assert not wrong.passed and wrong.n_passed == 0
        crash = grade(sb, "raise ValueError('x')", cards.data["tests"], None)
        assert crash.reason == "runtime_error"
        syntax = grade(sb, "def f(:", seniors.data["tests"], "countSeniors")
        assert syntax.reason == "compile_error"
        net = grade(sb, "import socket\nsocket.socket().connect(('127.0.0.1', 9))\nprint('YES')",
                    cards.data["tests"], None)
        assert not net.passed and net.reason == "violation"


@needs_bwrap
@pytest.mark.bwrap
def test_per_test_timeout(problems: dict) -> None:
    with make_sandbox(1.0) as sb:
        v = grade(sb, "while True:\n    pass\n", problems["cards"].data["tests"], None, 1.0)
    assert not v.passed and v.reason == "timeout"


@needs_bwrap
@pytest.mark.bwrap
def test_suite_with_replay(tmp_path: Path, problems: dict) -> None:
    lines = [
        {"suite": "livecodebench", "id": 0, "sample": 0,
         "completion": f"Here:\n```python\n{CARDS_WRONG}```\nbetter:\n```python\n{CARDS_OK}```"},
        {"suite": "livecodebench", "id": 1, "sample": 0, "completion": "no code at all"},
    ]
    replay = tmp_path / "r.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--suites", "livecodebench", "--limit", "2",
               "--out", str(out), "--data-dir", str(data_dir())) == 0
    e = results(out)["suites"]["livecodebench"]
    assert e["score"] == 0.5 and e["comparable"] is False and e["protocol"]["name"] == "custom"
    recs = {str(r["id"]): r for r in samples(out, "livecodebench")}  # batched by prompt length
    assert recs["0"]["score"] == 1.0 and recs["0"]["details"]["reason"] == "ok"
    assert recs["1"]["details"]["reason"] == "no_code_block"


def test_stdout_comparison_rules() -> None:
    assert stdout_matches("YES\nNO  \n\n", "YES\nNO")
    assert stdout_matches("  1 2 3\n", "1 2 3")
    assert stdout_matches("0.50\n", "0.5")  # decimals compare by value
    assert not stdout_matches("1 2\n", "1 2 3")
    assert not stdout_matches("YES\nNO\nNO", "YES\nNO")
    assert not stdout_matches("yes", "YES")


def _official_row(tmp_path: Path) -> Path:
    private = [{"input": "3\n", "output": "9\n", "testtype": "stdin"}]
    blob = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(private)))).decode()
    row = {"question_id": "abc123", "question_title": "square", "question_content": "Square n.",
           "platform": "atcoder", "contest_date": "2025-01-01", "starter_code": "",
           "difficulty": "easy", "metadata": "{}",
           "public_test_cases": json.dumps([{"input": "2\n", "output": "4\n",
                                             "testtype": "stdin"}]),
           "private_test_cases": blob}
    path = tmp_path / "test6.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def test_official_format_decodes_compressed_private_tests(tmp_path: Path) -> None:
    items = load_official([_official_row(tmp_path)])
    assert items[0].id == "abc123"
    assert [t["output"] for t in items[0].data["tests"]] == ["4\n", "9\n"]


def test_pickles_that_are_not_plain_strings_are_refused() -> None:
    class Evil:
        def __reduce__(self) -> tuple:
            return (print, ("pwned",))

    with pytest.raises(UserError, match="not a plain string"):
        string_from_pickle(pickle.dumps(Evil()))
    with pytest.raises(UserError):
        string_from_pickle(pickle.dumps(["a", "b"]))
    assert string_from_pickle(pickle.dumps("[1]", protocol=0)) == "[1]"
    evil = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(UserError):
        decode_tests(evil)


@needs_bwrap
@pytest.mark.bwrap
def test_official_files_are_comparable(tmp_path: Path) -> None:
    path = _official_row(tmp_path)
    replay = tmp_path / "r.jsonl"
    code = "n = int(input())\nprint(n * n)\n"
    replay.write_text(json.dumps({"suite": "livecodebench", "id": "abc123", "sample": 0,
                                  "completion": f"```python\n{code}```"}) + "\n")
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--suites", "livecodebench", "--lcb-files",
               str(path), "--out", str(out), "--data-dir", str(tmp_path)) == 0
    e = results(out)["suites"]["livecodebench"]
    assert e["score"] == 1.0 and e["protocol"]["name"] == "paper" and e["comparable"] is True
    assert e["data"][0]["path"].endswith("test6.jsonl")


CARDS_BUFFER = """import sys
data = sys.stdin.buffer.read().split()
t = int(data[0])
out = []
for s in data[1:1 + t]:
    out.append(b"YES" if sum(a != b for a, b in zip(s, b"abc")) <= 2 else b"NO")
sys.stdout.buffer.write(b"\\n".join(out) + b"\\n")
"""
SENIORS_NUMPY = """import numpy as np
class Solution:
    def countSeniors(self, details: List[str]) -> int:
        return np.int64(sum(int(d[11:13]) > 60 for d in details))
"""
CARDS_MAIN_GUARD = """def solve(s):
    return "YES" if sum(a != b for a, b in zip(s, "abc")) <= 2 else "NO"
if __name__ == "__main__":
    t = int(input())
    for _ in range(t):
        print(solve(input().strip()))
"""
CARDS_GLOBAL = """count = 0
def bump():
    global count
    count += 1
t = int(input())
for _ in range(t):
    s = input().strip()
    bump()
    print("YES" if sum(a != b for a, b in zip(s, "abc")) <= 2 else "NO")
"""


@needs_bwrap
@pytest.mark.bwrap
def test_programs_the_official_runner_accepts(problems: dict) -> None:
    """stdin.buffer / stdout.buffer, numpy scalar returns, __main__ guards, and programs
    with global declarations (run unwrapped) all pass as they do officially."""
    pytest.importorskip("numpy")
    cards, seniors = problems["cards"], problems["seniors"]
    with make_sandbox(6.0) as sb:
        for program in (CARDS_BUFFER, CARDS_MAIN_GUARD, CARDS_GLOBAL):
            verdict = grade(sb, program, cards.data["tests"], None)
            assert verdict.passed, (verdict, program)
        assert grade(sb, SENIORS_NUMPY, seniors.data["tests"], "countSeniors").passed


def test_top_level_code_is_wrapped_in_a_function() -> None:
    from spade.eval.suites._lcb_exec import WRAPPER, wrap_program

    wrapped = wrap_program(CARDS_OK)
    assert f"def {WRAPPER}():" in wrapped and wrapped.rstrip().endswith(f"{WRAPPER}()")
    assert wrap_program("import sys\nx = 1\n").startswith("import sys")
    assert wrap_program(CARDS_GLOBAL) == CARDS_GLOBAL  # global names: run as written
    assert wrap_program("def f(:") == "def f(:"  # the sandbox reports the syntax error
    nested_star = "if True:\n    from math import *\n"
    assert wrap_program(nested_star) == nested_star
