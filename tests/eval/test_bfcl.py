"""BFCL v4 on the real data, scored by bfcl-eval in its own venv: the oracle, replay sets
with known wrong answers, trials, limits, unavailable categories, worker safety."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _bfcl import bfcl_data, bfcl_python, records, replay_file, run
from spade.eval.suites.bfcl import CATEGORIES, GROUPS, group_scores

from spade.errors import UserError

#: Gold answers that bfcl-eval's own checker rejects whatever the call (data errors):
#: required array parameters whose acceptable values are an empty list (106, 112), a gold
#: parameter missing from the schema (862), a gold parameter name the schema lacks while
#: the schema's required one is absent from the gold (964).
#: Java: an ArrayList of ``any`` whose gold holds numbers and booleans (the checker reads
#: ``any`` as a string, 36, 65); a HashMap gold that is a bare dict, read as the list of
#: its string's characters (64).
UNSATISFIABLE_GOLD = {"live_simple_106-63-0", "live_simple_112-68-0",
                      "live_multiple_862-181-3", "live_multiple_964-207-0",
                      "simple_java_36", "simple_java_64", "simple_java_65"}


@pytest.fixture(scope="module")
def oracle_slice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    bfcl_python()
    out = tmp_path_factory.mktemp("bfcl") / "oracle"
    return out, run(out, "oracle", list(CATEGORIES), 2)


def test_oracle_scores_every_category_in_full_on_a_slice(
    oracle_slice: tuple[Path, dict[str, Any]]
) -> None:
    out, res = oracle_slice
    entry = res["suites"]["bfcl_v4"]
    assert entry["status"] == "ok" and entry["n_items"] == 2 * len(CATEGORIES)
    assert entry["score"] == 1.0
    assert set(entry["categories"]) == set(CATEGORIES)
    assert set(entry["groups"]) == set(GROUPS)
    # bfcl-eval's Overall Acc counts the agentic categories (not run offline) as 0: 40 %
    assert entry["groups"].pop("overall") == pytest.approx(0.6)
    assert all(v == 1.0 for v in entry["groups"].values())
    board = entry["leaderboard"]
    assert board["model"] == "Qwen/Qwen3-8B-FC"
    assert board["tables"]["data_non_live"]["Java Simple AST"] == 1.0
    assert entry["scorer"]["implementation"] == "bfcl-eval"
    assert entry["scorer"]["version"] == "2026.3.23"
    assert entry["scorer"]["checker_model_config"] == "gpt-4o-2024-11-20-FC"
    assert set(entry["unavailable"]) == {"web_search", "memory"}
    assert entry["protocol"]["name"] == "custom"
    assert entry["protocol"]["limit_mode"] == "per_category"
    files = {d["path"]: d for d in entry["data"]}
    assert files["bfcl_v4/BFCL_v4_multi_turn_base.json"]["manifest"] == "ok"
    assert all(len(d["sha256"]) == 64 for d in entry["data"])
    recs = records(out)
    mt = recs[("multi_turn_miss_func_0", 0)]["details"]
    # the oracle's run reads text as Qwen3 FC: a held-out function comes in the user message
    assert entry["tool_format"]["format"] == "qwen3_fc" and mt["tool_format"] == "qwen3_fc"
    held = mt["transcript"]["turns"][3]
    assert mt["valid"] and not held["added_tools"]
    assert "I have updated some more functions" in held["user"][0]["content"]


@pytest.mark.slow
def test_oracle_on_every_item(tmp_path: Path) -> None:
    """The whole data set: 100 % except the gold answers upstream's checker rejects."""
    res = run(tmp_path / "o", "oracle", list(CATEGORIES), None)
    failed = {k for (k, _), r in records(tmp_path / "o").items() if r["score"] < 1}
    assert failed == UNSATISFIABLE_GOLD
    entry = res["suites"]["bfcl_v4"]
    assert entry["groups"]["non_live"] == 1.0 and entry["groups"]["multi_turn"] == 1.0
    assert entry["n_items"] == 4441


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _oracle_scripts(gold: Path, categories: list[str]) -> dict[str, Any]:
    """Episode scripts of the oracle's first two items of ``categories``."""
    if not (gold / "samples").is_dir():
        run(gold, "oracle", categories, 2)
    return {k: json.loads(r["completion"]) for (k, _), r in records(gold).items()
            if r["details"]["category"] in categories}


WRONG_CATEGORIES = ["simple_python", "parallel", "multiple", "irrelevance", "live_relevance",
                    "multi_turn_base"]


Verdicts = dict[str, tuple[float, str | None]]


def wrong_answer_set(tmp_path: Path, gold: Path) -> tuple[Path, Verdicts]:
    """Replay scripts: gold ones (from the oracle run in ``gold``) plus one known mistake
    of each kind, with the verdict bfcl-eval's checker gives it."""
    scripts = _oracle_scripts(gold, WRONG_CATEGORIES)
    one = lambda *calls: {"turns": [[{"content": "", "tool_calls": list(calls)}]]}  # noqa: E731
    scripts["simple_python_1"] = one(_call("math_factorial", number=6))  # wrong argument
    scripts["simple_python_0"] = one(  # an extra call
        _call("calculate_triangle_area", base=10, height=5),
        _call("calculate_triangle_area", base=10, height=5))
    scripts["parallel_0"] = one(_call("spotify_play", artist="Taylor Swift", duration=20))
    scripts["irrelevance_0"] = one(_call(first_tool(gold, "irrelevance_0")))
    scripts["multiple_0"] = {"turns": [["The triangle has area 6."]]}  # no call at all
    scripts["live_relevance_0-0-0"] = {"turns": [["I cannot do that."]]}
    mt = scripts["multi_turn_base_0"]
    mt["turns"][0][0]["tool_calls"] = mt["turns"][0][0]["tool_calls"][:-1]  # drop mv
    scripts["multi_turn_base_1"]["turns"][0] = [  # 21 calling steps: force-quit
        {"content": "", "tool_calls": [_call("ls")]}] * 21
    expected = {
        "simple_python_0": (0.0, "simple_function_checker:wrong_count"),
        "simple_python_1": (0.0, "value_error:others"),
        "parallel_0": (0.0, "parallel_function_checker_no_order:wrong_count"),
        "parallel_1": (1.0, None),
        # a text reply without a call, read as Qwen3 FC reads text: no call decoded
        "multiple_0": (0.0, "multiple_function_checker:wrong_count"),
        "multiple_1": (1.0, None),
        "irrelevance_0": (0.0, "irrelevance_error:decoder_success"),
        "irrelevance_1": (1.0, None),
        "live_relevance_0-0-0": (0.0, "relevance_error:decoder_failed"),
        "live_relevance_1-1-0": (1.0, None),
        "multi_turn_base_0": (0.0, "multi_turn:instance_state_mismatch"),
        "multi_turn_base_1": (0.0, "multi_turn:force_terminated"),
    }
    return replay_file(tmp_path / "wrong.jsonl", scripts), expected


def first_tool(gold: Path, key: str) -> str:
    rec = records(gold)[(key, 0)]
    tool = rec["details"]["transcript"]["tools"][0]
    return str(tool.get("function", tool)["name"]).replace(".", "_")  # as native calls name it


def test_known_wrong_answers_score_what_the_upstream_checker_says(
    tmp_path: Path, oracle_slice: tuple[Path, dict[str, Any]]
) -> None:
    path, expected = wrong_answer_set(tmp_path, oracle_slice[0])
    res = run(tmp_path / "w", f"replay:{path}", WRONG_CATEGORIES, 2)
    recs = records(tmp_path / "w")
    got = {k: (r["score"], r["details"]["error_type"]) for (k, _), r in recs.items()}
    for key, want in expected.items():
        assert got[key] == want, key
    assert all(score == 1.0 for k, (score, _) in got.items() if k not in expected)
    mt = recs[("multi_turn_base_1", 0)]["details"]
    assert mt["turn_ends"] == ["step_cap"] and len(mt["bfcl_result"]) == 1
    cats = res["suites"]["bfcl_v4"]["categories"]
    assert cats["parallel"] == {"accuracy": 0.5, "n": 2}
    assert cats["simple_python"] == {"accuracy": 0.0, "n": 2}
    assert cats["multi_turn_base"] == {"accuracy": 0.0, "n": 2}


def test_any_trial_count_gives_each_sample_its_own_seed(tmp_path: Path) -> None:
    bfcl_python()
    res = run(tmp_path / "t", "oracle", ["simple_python", "multi_turn_base"], 1,
              overrides={"samples": 3})
    entry = res["suites"]["bfcl_v4"]
    assert entry["n_samples"] == 3 and entry["metric"] == "avg@3" and entry["score"] == 1.0
    recs = records(tmp_path / "t")
    assert len(recs) == 6 and len({r["seed"] for r in recs.values()}) == 6
    steps = recs[("multi_turn_base_0", 2)]["details"]["transcript"]["turns"][0]["steps"]
    assert steps[0]["seed"] != recs[("multi_turn_base_0", 1)]["details"]["transcript"][
        "turns"][0]["steps"][0]["seed"]


def test_rerun_resumes_without_replaying(oracle_slice: tuple[Path, dict[str, Any]]) -> None:
    out, first = oracle_slice
    before = (out / "samples" / "bfcl_v4.jsonl").read_text()
    again = run(out, "oracle", list(CATEGORIES), 2)
    assert (out / "samples" / "bfcl_v4.jsonl").read_text() == before
    assert again["suites"]["bfcl_v4"]["categories"] == first["suites"]["bfcl_v4"]["categories"]


@pytest.mark.parametrize("category", ["web_search", "memory_kv", "nonsense"])
def test_unavailable_or_unknown_category_is_refused(tmp_path: Path, category: str) -> None:
    with pytest.raises(UserError, match=r"unavailable offline|unknown bfcl_v4 category"):
        run(tmp_path / "u", "oracle", [category], 1)


def test_groups_and_overall_are_bfcl_evals_leaderboard_numbers(tmp_path: Path) -> None:
    """Non-live averages Python, Java and JavaScript simple; Overall Acc has bfcl-eval's
    weights (computed by its own generate_leaderboard_csv, checked here by hand)."""
    from spade.eval.suites.bfcl import BfclV4
    from spade.eval.suites.bfcl_bridge import BfclBridge

    acc = {c: (i % 7) / 7 for i, c in enumerate(CATEGORIES)}
    cats = {c: {"accuracy": a, "n": 3 + i} for i, (c, a) in enumerate(acc.items())}
    suite = BfclV4.__new__(BfclV4)
    suite._bridge, suite._format = BfclBridge(bfcl_python()), "qwen3_fc"
    suite.protocol = type("P", (), {"extra": {}})()
    groups = group_scores(cats, suite.leaderboard(cats))
    mean = lambda *xs: sum(xs) / len(xs)  # noqa: E731
    simple = mean(acc["simple_python"], acc["simple_java"], acc["simple_javascript"])
    non_live = mean(simple, acc["multiple"], acc["parallel"], acc["parallel_multiple"])
    live_cats = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
    live = (sum(acc[c] * cats[c]["n"] for c in live_cats)
            / sum(cats[c]["n"] for c in live_cats))
    multi = mean(*(acc[c] for c in CATEGORIES if c.startswith("multi_turn")))
    irrelevance = mean(acc["irrelevance"], acc["live_irrelevance"])
    assert groups["simple"] == pytest.approx(simple)
    assert groups["non_live"] == pytest.approx(non_live)
    assert groups["live"] == pytest.approx(live)
    assert groups["multi_turn"] == pytest.approx(multi)
    assert groups["irrelevance"] == pytest.approx(irrelevance)
    assert groups["relevance"] == pytest.approx(acc["live_relevance"])
    assert groups["overall"] == pytest.approx(
        0.1 * non_live + 0.1 * live + 0.1 * irrelevance + 0.3 * multi)  # agentic: 0
    # a group one of whose members was not run has no number (bfcl-eval would count it 0)
    partial = {k: v for k, v in cats.items() if k != "simple_java"}
    suite._bridge = BfclBridge(bfcl_python())
    less = group_scores(partial, suite.leaderboard(partial))
    assert less["non_live"] is None and less["simple"] is None and less["overall"] is None
    assert less["live"] == pytest.approx(live)


def test_worker_never_evaluates_model_written_code(tmp_path: Path) -> None:
    from spade.eval.suites.bfcl_bridge import BfclBridge

    entry = json.loads((bfcl_data() / "bfcl_v4" / "BFCL_v4_multi_turn_base.json")
                       .read_text().splitlines()[0])
    bridge = BfclBridge(bfcl_python())
    try:
        ep = bridge.new_episode(entry)
        from spade.envs import ToolCall

        marker = tmp_path / "pwned"
        hostile = [
            ToolCall("open", {"file": str(marker), "mode": "w"}),
            ToolCall("ls", {f"a=open({str(marker)!r},'w'),b": 1}),
            ToolCall(f"open({str(marker)!r},'w').close", {}),
            ToolCall("ls", {}),
        ]
        results = ep.execute(hostile)
        ep.close()
    finally:
        bridge.close()
    assert not marker.exists()
    assert all("not defined" in r for r in results[:3])
    assert "current_directory_content" in results[3]


def test_unusable_bfcl_interpreter_is_one_clear_error(tmp_path: Path, monkeypatch: Any,
                                                      capsys: Any) -> None:
    import sys

    from spade.cli import main

    monkeypatch.setenv("SPADE_BFCL_PYTHON", sys.executable)  # no bfcl-eval in here
    code = main(["eval", "run", "--quiet", "--model", "oracle", "--suites", "bfcl_v4",
                 "--limit", "1", "--out", str(tmp_path / "x"), "--data-dir", str(bfcl_data())])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and any("cannot load bfcl-eval" in line for line in err)
    assert not any("Traceback" in line for line in err)


def test_openai_compatible_server_with_native_tools(tmp_path: Path) -> None:
    """The openai provider end to end: tools= in the request, tool_calls scored upstream."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    bodies: list[dict[str, Any]] = []

    class Server(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            names = [t["function"]["name"] for t in body.get("tools", [])]
            message: dict[str, Any] = {"role": "assistant", "content": "No tool fits."}
            if names == ["calculate_triangle_area"]:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {
                        "name": names[0], "arguments": '{"base": 10, "height": 5}'}}]}
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "message": message,
                                     "finish_reason": "stop"}]})

    bfcl_python()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        res = run(tmp_path / "oa", f"openai:http://127.0.0.1:{server.server_port}/v1#m",
                  ["simple_python", "irrelevance"], 1)
    finally:
        server.shutdown()
        server.server_close()
    cats = res["suites"]["bfcl_v4"]["categories"]
    assert cats == {"simple_python": {"accuracy": 1.0, "n": 1},
                    "irrelevance": {"accuracy": 1.0, "n": 1}}
    first = next(b for b in bodies if b["tools"][0]["function"]["name"]
                 == "calculate_triangle_area")
    assert first["temperature"] == 0.0 and isinstance(first["seed"], int)
    assert first["messages"] == [{"role": "user", "content": json.loads(
        (bfcl_data() / "bfcl_v4" / "BFCL_v4_simple_python.json").read_text()
        .splitlines()[0])["question"][0][0]["content"]}]
    assert "Python 3 syntax" in first["tools"][0]["function"]["description"]
