"""Scoring throughput of the evaluation harness; prints ONE JSON object.

- ``replay_samples_per_s``: samples generated (replayed) + scored + stored per second for each
  suite, with the replay provider over completions that are half right, half wrong;
- ``lcb_sandbox``: LiveCodeBench grading in the bwrap sandbox: real public problems with
  correct solutions (programs/s, one worker start each), and tests/s on a 50-test problem.

Usage: python benchmarks/eval_scoring.py [--limit N] [--samples K]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade.eval._protocol import build  # noqa: E402
from spade.eval._runner import EvalConfig, run_eval  # noqa: E402
from spade.eval.data import DataDir, resolve_data_dir  # noqa: E402
from spade.eval.suites import SUITES  # noqa: E402

SUITE_LIMITS = {"aime24": None, "aime25": None, "gpqa_diamond": None, "reasoning_gym": 2}
CARDS = ("t = int(input())\nfor _ in range(t):\n    s = input().strip()\n"
         "    print('YES' if sum(a != b for a, b in zip(s, 'abc')) <= 2 else 'NO')\n")
SENIORS = ("class Solution:\n    def countSeniors(self, details: List[str]) -> int:\n"
           "        return sum(int(d[11:13]) > 60 for d in details)\n")


def replay_bench(data: Path, tmp: Path, samples: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for sid, limit in SUITE_LIMITS.items():
        suite = SUITES.get(sid)(build(sid, {"samples": samples, "limit": limit}), 0)
        lines = []
        for item in suite.select(suite.load(DataDir(data)).items):
            for s in range(samples):
                text = suite.oracle(item, s) if s % 2 == 0 else "no idea \\boxed{1} ANSWER: A"
                lines.append(json.dumps({"suite": sid, "id": item.id, "sample": s,
                                         "completion": text}))
        replay = tmp / f"{sid}.jsonl"
        replay.write_text("\n".join(lines) + "\n")
        cfg = EvalConfig(model=f"replay:{replay}", suites=(sid,), out=tmp / f"run-{sid}",
                        data_dir=data, overrides={"samples": samples, "limit": limit},
                        quiet=True)
        t0 = time.perf_counter()
        res = run_eval(cfg)
        wall = time.perf_counter() - t0
        entry = res["suites"][sid]
        n = entry["n_items"] * samples
        out[sid] = {
            "samples": n,
            "samples_per_s_scoring": round(n / max(entry["timing_s"], 1e-9), 1),
            "samples_per_s_wall_incl_load": round(n / wall, 1),
        }
    return out


def lcb_bench(data: Path) -> dict[str, float]:
    from spade.eval.suites._lcb_data import load_public
    from spade.eval.suites._lcb_exec import grade, make_sandbox

    items = load_public(data / "livecodebench_public" / "lcb_public_tests_879.json")
    cards = items[0]
    seniors = next(i for i in items if i.data["func_name"] == "countSeniors")
    synthetic = [{"input": f"{i}\n{i + 1}", "output": str(2 * i + 1), "testtype": "functional"}
                 for i in range(50)]
    add = "class Solution:\n    def add(self, a: int, b: int) -> int:\n        return a + b\n"
    with make_sandbox(6.0) as sb:
        grade(sb, CARDS, cards.data["tests"], None)  # warm the fork server
        t0, progs, tests = time.perf_counter(), 0, 0
        for _ in range(20):
            for code, item in ((CARDS, cards), (SENIORS, seniors)):
                v = grade(sb, code, item.data["tests"], item.data["func_name"])
                assert v.passed, v
                progs += 1
                tests += v.n_tests
        real = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(5):
            v = grade(sb, add, synthetic, "add")
            assert v.passed, v
        many = time.perf_counter() - t0
    return {
        "real_problems_programs_per_s": round(progs / real, 1),
        "real_problems_tests_per_s": round(tests / real, 1),
        "tests_per_s_50_test_problem": round(250 / many, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4)
    args = parser.parse_args()
    data = resolve_data_dir()
    with tempfile.TemporaryDirectory() as tmp:
        result = {"replay_samples_per_s": replay_bench(data, Path(tmp), args.samples),
                  "lcb_sandbox": lcb_bench(data)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
