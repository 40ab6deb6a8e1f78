"""ACEBench suite on the upstream checkout: oracle, wrong answers, upstream's own entry point.

The cross-checks run upstream's ``eval_main.py`` as a subprocess, in a scratch workspace
laid out as it expects (``data_all/data_en`` = the shared data, ``result_all/result_en/
<model>/data_<category>_result.json`` = our completions), and compare its score files with
our per-item verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _evalrun import cli, data_dir, results, samples
from _user_server import user_server
from spade.eval.suites._acebench_upstream import resolve_dir

#: Items whose gold answer upstream's own checker rejects (so no oracle can pass them):
#: two calls of one function with an empty list argument, and a list holding the string
#: "None" where the checker's type lookup expects None.
CHECKER_REJECTS_GOLD = {"normal_single_turn_parallel_function_42", "normal_preference_40"}
#: agent_multi_step items whose gold milestones do not lead to the gold final state (a
#: milestone names a product the menu does not have, or leaves out a login the state needs).
MILESTONES_MISS_STATE = {f"agent_multi_step_{i}" for i in (0, 1, 12, 13, 14, 15, 16, 17)}


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = resolve_dir()
    if not (root / "eval_main.py").is_file():
        pytest.skip(f"ACEBench checkout not found at {root}")
    return root


@pytest.fixture(scope="module")
def data() -> Path:
    d = data_dir()
    if not (d / "acebench/data_en/data_agent_multi_step.json").is_file():
        pytest.skip("ACEBench data not in the shared data dir")
    return d


@pytest.fixture(scope="module")
def oracle_run(checkout: Path, data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ace") / "oracle"
    assert cli("--model", "oracle", "--suites", "acebench", "--out", str(out)) == 0
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def upstream_scores(checkout: Path, data: Path, work: Path,
                    results_by_cat: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    """Run upstream's eval_main.py on ``results_by_cat``; its score file rows per category."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "data_all").symlink_to(data / "acebench")
    res = work / "result_all" / "result_en" / "spade"
    res.mkdir(parents=True)
    (work / "score_all" / "score_en" / "spade").mkdir(parents=True)
    for cat, rows in results_by_cat.items():
        (res / f"data_{cat}_result.json").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(checkout))
    proc = subprocess.run(
        [sys.executable, str(checkout / "eval_main.py"), "--model", "spade", "--language",
         "en", "--category", *results_by_cat], cwd=work, env=env, capture_output=True,
        text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = {}
    for cat in results_by_cat:
        out[cat] = _rows(work / "score_all" / "score_en" / "spade" / f"data_{cat}_score.json")
    return out


def test_missing_checkout_is_one_line_error(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    partial = tmp_path / "acebench"
    (partial / "model_eval").mkdir(parents=True)
    (partial / "eval_main.py").write_text("")
    for n, (where, expect) in enumerate(((tmp_path / "nowhere", "ACEBench checkout not found"),
                                         (partial, "lacks"))):
        rc = cli("--model", "oracle", "--suites", "acebench", "--acebench-dir", str(where),
                 "--out", str(tmp_path / f"r{n}"))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and expect in err[0], err


def test_oracle_full_marks_but_upstream_data_gaps(oracle_run: Path) -> None:
    entry = results(oracle_run)["suites"]["acebench"]
    recs = samples(oracle_run, "acebench")
    failed = {r["id"] for r in recs if r["score"] < 1.0}
    assert failed == CHECKER_REJECTS_GOLD | MILESTONES_MISS_STATE
    assert set(entry["upstream_gold_failures"]) == failed  # each listed with its reason
    assert entry["n_items"] == 1023 - 30  # agent_multi_turn needs a user model
    assert entry["special"] == 1.0 and entry["normal"] == pytest.approx(0.998)
    assert entry["categories"]["agent_multi_step"] == 0.6
    assert entry["agent"] is None and entry["summary"] is None  # multi_turn unavailable
    assert entry["notes"]["unavailable"] == {
        "agent_multi_turn": "needs a user simulator (--user-model SPEC)"}
    assert entry["notes"]["scorer"]["code_sha256"] and entry["protocol"]["limit_mode"]
    assert {d["path"].split("/")[-1] for d in entry["data"]} >= {"data_agent_multi_step.json"}


def _wrong(text: str, function: str) -> dict[str, str]:
    """Known-wrong variants of a gold completion ``[f(a=..), ...]``."""
    body = text[1:-1]
    out = {"irrelevance_refusal": '["Due to the limitations of the function, I cannot '
                                  'solve this problem."]',
           "call_not_wanted": f"[{function}(x=1)]",
           "extra_call": f"[{body}, {body}]",
           "wrong_argument": text.replace("'", "'X", 1) if "'" in text else text + "x"}
    if "), " in body:
        out["missing_call"] = "[" + body.split("), ")[0] + ")]"
    return out


def test_wrong_answers_equal_upstream_entry_point(checkout: Path, data: Path, tmp_path: Path,
                                                  oracle_run: Path) -> None:
    cats = ["normal_single_turn_single_function", "normal_single_turn_parallel_function",
            "special_irrelevant", "special_incomplete"]
    gold = {r["id"]: r["completion"] for r in samples(oracle_run, "acebench")}
    rows = {c: [json.loads(x) for x in
                (data / f"acebench/data_en/data_{c}.json").read_text().splitlines()]
            for c in cats}
    order = {c: [r["id"] for r in rows[c]] for c in cats}
    chosen: dict[str, str] = {}
    for c in cats:
        for k, row in enumerate(rows[c][:12]):
            variants = list(_wrong(gold[row["id"]], row["function"][0]["name"]).values())
            chosen[row["id"]] = variants[k % len(variants)]
        chosen[order[c][0] if c.startswith("special_irr") else order[c][1]] = (
            "[" + json.dumps("Missing necessary parameters (x) for the api (y)") + "]")
    replay = tmp_path / "replay.jsonl"
    lines = [{"suite": "acebench", "id": key, "sample": 0,
              "completion": chosen.get(key, text)} for key, text in gold.items()]
    replay.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--suites", "acebench", "--out", str(out)) == 0
    ours = {r["id"]: r for r in samples(out, "acebench")}
    upstream = upstream_scores(checkout, data, tmp_path / "work", {
        c: [{"id": key, "result": ours[key]["completion"]} for key in order[c]] for c in cats})
    entry = results(out)["suites"]["acebench"]
    for c in cats:
        summary, *wrong_rows = upstream[c]
        their_wrong = {r["id"] for r in wrong_rows if not r.get("valid", True)}
        our_wrong = {key for key in order[c] if ours[key]["score"] < 1.0}
        assert our_wrong == their_wrong, c
        assert entry["categories"][c] == pytest.approx(summary["accuracy"], abs=1e-3), c
        assert len(our_wrong - CHECKER_REJECTS_GOLD) >= 4, c  # the variants really are wrong


def test_agent_multi_step_equals_upstream_agent_eval(checkout: Path, data: Path,
                                                     tmp_path: Path, oracle_run: Path) -> None:
    recs = sorted((r for r in samples(oracle_run, "acebench") if r["id"].startswith("agent_")),
                  key=lambda r: int(r["id"].rsplit("_", 1)[1]))
    rows = [{"id": r["id"], "result": r["details"]["final_state"],
             "process": r["details"]["process"]} for r in recs]
    summary, *wrong = upstream_scores(checkout, data, tmp_path, {"agent_multi_step": rows})[
        "agent_multi_step"]
    entry = results(oracle_run)["suites"]["acebench"]
    assert {f"agent_multi_step_{r['id']}" for r in wrong} == {
        r["id"] for r in recs if r["score"] < 1.0}
    assert summary["end_to_end_accuracy"] == entry["categories"]["agent_multi_step"]
    assert summary["process_accuracy"] == pytest.approx(
        entry["process_accuracy"]["agent_multi_step_process"], abs=1e-3)


def test_model_written_code_never_runs(checkout: Path, data: Path, tmp_path: Path,
                                       oracle_run: Path) -> None:
    target = tmp_path / "pwned"
    gold = {r["id"]: r["completion"] for r in samples(oracle_run, "acebench")}
    key = "normal_atom_number_0"
    # upstream decodes an arithmetic argument with eval(): this one would create the file
    hostile = gold[key].replace(")]", f", x=open(file={str(target)!r}, mode='w')+1)]")
    lines = []
    for k, text in gold.items():
        lines.append({"suite": "acebench", "id": k, "sample": 0,
                      "completion": hostile if k == key else text})
        lines.append({"suite": "acebench", "id": k, "sample": 1, "completion": text})
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--suites", "acebench", "--samples", "2",
               "--limit", "1", "--out", str(out)) == 0
    assert not target.exists()
    rec = next(r for r in samples(out, "acebench") if r["id"] == key and r["sample"] == 0)
    assert rec["score"] == 0.0 and "refused" in rec["details"]["error"]


def test_constant_arithmetic_is_evaluated_as_upstream_does() -> None:
    from spade.eval.suites._acebench_guard import restricted_eval_for

    ev = restricted_eval_for({})
    assert ev("2*3+1") == 7 and ev("-4/2") == -2.0
    for bad in ("__import__('os')", "open(file='x')", "10**10**10", "(lambda: 1)()", "a+b"):
        with pytest.raises(ValueError):
            ev(bad)


def test_concatenated_literals_are_evaluated_as_upstream_does() -> None:
    """Upstream evaluates any binary-operator argument (``eval(ast.unparse(value))``): a
    string, list or tuple concatenation is a value, not a refused call."""
    from spade.eval.suites._acebench_guard import restricted_eval_for

    ev = restricted_eval_for({})
    assert ev("'Olive ' + 'Garden'") == "Olive Garden"
    assert ev("['festivals'] + ['cuisine']") == ["festivals", "cuisine"]
    assert ev("('a',) + ('b',) + ('c',)") == ("a", "b", "c")
    for bad in ("'a' * 10**9", "'a' + 1", "['a'] + ('b',)", "[open('x')] + [1]",
                "'x' + 'y' * 200000", "[" + "'a'," * 60000 + "] + [" + "'b'," * 60000 + "]"):
        with pytest.raises(ValueError):
            ev(bad)


#: operations over literals that upstream's ``eval(ast.unparse(value))`` turns into values
#: (answers written this way were refused before, so a right answer scored 0)
PYTHON_VALUES = ("'ab' * 2", "[1, 2] * 1", "('a',) * 2", "{'a': 1} | {'b': 2}",
                 "'%s km' % 'x'", "True + 0", "5 | 0", "6 & 3", "1 << 4", "2 ** 70 - 2 ** 70",
                 "7 // 2", "-(1 + 2)", "not 0", "~5", "{1, 2} - {2}", "['a' + 'b'] + ['c']",
                 "{'k': 'a' + 'b'}", "0.1 + 0.2", "b'a' + b'b'", "(1 + 2j) * 2")


def test_any_operation_over_literals_is_evaluated_as_python_does() -> None:
    from spade.eval.suites._acebench_guard import restricted_eval_for

    ev = restricted_eval_for({})
    for source in PYTHON_VALUES:
        assert ev(source) == eval(source), source  # upstream's own eval, on safe literals
    for bad in ("'a' * 10**9", "[0] * 10**8", "1 << 10**7", "'%*d' % (10**8, 1)",
                "'%.9999999f' % 1.0", "1 / 0", "x + 1", "len('ab') + 1", "__name__ + 'x'"):
        with pytest.raises(ValueError):
            ev(bad)


def test_multi_turn_with_user_model_over_local_http(checkout: Path, data: Path,
                                                    tmp_path: Path) -> None:
    replies: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        replies.append(messages[0]["content"])
        return "finish conversation" if len(replies) > 1 else "Please help me with my task."

    out = tmp_path / "run"
    with user_server(reply) as (spec, seen):
        rc = cli("--model", "oracle", "--suites", "acebench", "--user-model", spec, "--limit",
                 "1", "--out", str(out))
    assert rc == 0
    entry = results(out)["suites"]["acebench"]
    assert "agent_multi_turn" in entry["categories"] and "unavailable" not in entry["notes"]
    assert entry["agent"] is not None and entry["summary"] is not None
    assert entry["user_model"]["spec"] == spec and entry["user_model"]["sampling"][
        "temperature"] == 0.001
    assert seen and seen[0]["messages"][0]["content"].startswith(
        "You are a user interacting with an agent.")
    assert seen[0]["temperature"] == 0.001 and seen[0]["max_tokens"] == 1000
    rec = next(r for r in samples(out, "acebench") if r["id"] == "agent_multi_turn_0")
    assert "process_accuracy" in rec["details"] and rec["details"]["messages"]


def test_resumed_run_keeps_process_accuracy(checkout: Path, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--model", "oracle", "--suites", "acebench", "--limit", "2", "--out", str(out))
    assert cli(*args) == 0
    first = results(out)["suites"]["acebench"]
    (out / "results.json").unlink()
    assert cli(*args) == 0  # resumes: every record is there, nothing is played again
    again = results(out)["suites"]["acebench"]
    assert again["process_accuracy"] == first["process_accuracy"]
    assert again["process_accuracy"]["agent_multi_step_process"] is not None
