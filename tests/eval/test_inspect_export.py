"""Runs exported to inspect-ai logs load back with inspect's own reader and viewer server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _evalrun import cli, data_dir, results, samples
from spade.eval.inspect_export import export_run
from spade.eval.inspect_export._export import read_records
from spade.eval.inspect_export._messages import to_inspect

from spade.cli import main

inspect_log = pytest.importorskip("inspect_ai.log")


def _replay_run(tmp_path: Path) -> Path:
    """A real run: replayed completions, some right and some wrong, two suites, 2 samples."""
    gold = tmp_path / "gold"
    args = (
        "--suites",
        "aime24,gpqa_diamond",
        "--limit",
        "3",
        "--samples",
        "2",
        "--data-dir",
        str(data_dir()),
        "--seed",
        "7",  # gold and replay runs must shuffle GPQA's choices alike
    )
    assert cli("--model", "oracle", "--out", str(gold), *args) == 0
    lines = []
    for suite in ("aime24", "gpqa_diamond"):
        for rec in samples(gold, suite):
            wrong = (rec["sample"] == 1) or rec["id"] == samples(gold, suite)[0]["id"]
            text = (
                ("\\boxed{0}" if suite == "aime24" else "ANSWER: E") if wrong else rec["completion"]
            )
            lines.append(
                {
                    "suite": suite,
                    "id": rec["id"],
                    "sample": rec["sample"],
                    "completion": f"thinking...\n{text}",
                }
            )
    replay = tmp_path / "mixed.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = tmp_path / "run"
    assert cli("--model", f"replay:{replay}", "--out", str(out), *args) == 0
    return out


def _by_key(log: Any) -> dict[tuple[str, int], Any]:
    return {(str(s.id), s.epoch - 1): s for s in log.samples}


def test_automatic_export_loads_back_with_inspect_reader(tmp_path: Path) -> None:
    out = _replay_run(tmp_path)
    doc = results(out)
    logs = sorted((out / "inspect").glob("*.eval"))
    assert len(logs) == 2  # written by `spade eval run` itself
    for suite in ("aime24", "gpqa_diamond"):
        entry = doc["suites"][suite]
        (path,) = [p for p in logs if f"_{suite.replace('_', '-')}_" in p.name]
        log = inspect_log.read_eval_log(str(path))
        assert log.status == "success" and log.eval.task == suite
        recs = samples(out, suite)
        assert len(log.samples) == len(recs) == 6
        got = _by_key(log)
        for rec in recs:
            s = got[(str(rec["id"]), rec["sample"])]
            assert s.scores[suite].value == rec["score"]
            assert s.scores[suite].answer == rec["extracted"]
            assert (
                s.metadata["seed"] == rec["seed"]
                and s.metadata["prompt_hash"] == rec["prompt_hash"]
            )
            assert s.metadata["prompt"] == "rebuilt (hash verified)"
            assert s.messages[-1].role == "assistant" and s.messages[-1].text == rec["completion"]
            assert s.messages[0].role in ("user", "system") and s.messages[0].text
        assert {r["score"] for r in recs} == {0.0, 1.0}  # the replay really mixes right and wrong
        metrics = log.results.scores[0].metrics
        assert metrics["mean"].value == pytest.approx(entry["score"])
        assert metrics["stderr"].value == pytest.approx(entry["stderr"])
        assert log.eval.config.epochs == 2 and log.eval.config.limit == 3
        meta = log.eval.metadata
        assert meta["model"] == doc["model"] and meta["model"]["sha256"]
        assert log.eval.model == doc["model"]["spec"]
        assert meta["protocol"] == entry["protocol"] and meta["protocol"]["name"] == "custom"
        assert [d["sha256"] for d in meta["data"]] == [d["sha256"] for d in entry["data"]]
        assert meta["seed"] == 7 == log.eval.model_generate_config.seed
        assert (
            log.eval.revision is None
            or log.eval.revision.commit == doc["code_version"]["git_commit"]
        )


def test_export_is_deterministic_and_cli_reports_errors(tmp_path: Path, capsys: Any) -> None:
    out = _replay_run(tmp_path)
    before = sorted(p.name for p in (out / "inspect").glob("*.eval"))
    capsys.readouterr()
    assert main(["eval", "export-inspect", str(out), "--out", str(tmp_path / "logs")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert sorted(Path(p).name for p in printed["logs"].values()) == before
    assert printed["samples"] == {"aime24": 6, "gpqa_diamond": 6}
    assert main(["eval", "export-inspect", str(tmp_path / "absent")]) == 2
    (tmp_path / "a-file").write_text("x")
    assert main(["eval", "export-inspect", str(out), "--out", str(tmp_path / "a-file")]) == 2
    assert main(["eval", "export-inspect", str(out), "--suites", "bfcl_v4"]) == 2
    err = capsys.readouterr().err
    assert "no such run directory" in err and "no suite(s) bfcl_v4" in err
    # an --out that is a file is refused at parse time, before any log is read
    assert "argument --out" in err and "is not a directory" in err and err.count("\n") == 3


def test_prompt_that_cannot_be_rebuilt_is_marked_not_invented(tmp_path: Path) -> None:
    out = _replay_run(tmp_path)
    run_file = out / "run.json"
    doc = json.loads(run_file.read_text())
    doc["args"]["data_dir"] = str(tmp_path / "moved-away")
    run_file.write_text(json.dumps(doc))
    res = export_run(out, tmp_path / "logs", suites=["aime24"])
    log = inspect_log.read_eval_log(str(res.logs["aime24"]))
    assert all(s.metadata["prompt"].startswith("unavailable: data directory") for s in log.samples)
    assert all("prompt not shown" in s.messages[0].text for s in log.samples)
    assert res.prompts["aime24"].startswith("data directory")


def test_partial_and_missing_suites_keep_their_status(tmp_path: Path) -> None:
    out = _replay_run(tmp_path)
    doc = json.loads((out / "results.json").read_text())
    doc["suites"]["aime24"]["status"] = "partial"
    doc["suites"]["livecodebench"] = {
        "status": "missing",
        "missing_file": "lcb.json",
        "n_items": 0,
        "n_samples": 1,
        "comparable": False,
    }
    (out / "results.json").write_text(json.dumps(doc))
    with (out / "samples" / "gpqa_diamond.jsonl").open("a") as fh:
        fh.write('{"suite": "gpqa_diamond", "id": "torn')  # a killed writer's last line
    res = export_run(out, tmp_path / "logs")
    read = {s: inspect_log.read_eval_log(str(p)) for s, p in res.logs.items()}
    assert read["aime24"].status == "cancelled"
    assert (
        read["livecodebench"].status == "error"
        and "lcb.json" in read["livecodebench"].error.message
    )
    assert len(read["gpqa_diamond"].samples) == 6
    assert len(read_records(out / "samples" / "gpqa_diamond.jsonl")) == 6


def test_tool_calls_and_results_become_inspect_tool_messages(tmp_path: Path) -> None:
    convo = [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
                },
                {"name": "broken", "arguments": "{not json"},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "18C"},
        {"role": "tool", "tool_call_id": "c2", "name": "get_time", "content": "12:00"},
        {"role": "assistant", "content": "18C at noon."},
        {
            "role": "user",
            "content": "Toggling airplane mode.",
            "tool_calls": [
                {
                    "id": "u1",
                    "type": "function",
                    "function": {"name": "toggle_airplane_mode", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "u1", "content": "airplane mode off", "requestor": "user"},
    ]
    msgs = to_inspect(convo, model="m")
    # a simulated user's own tool call (tau2 telecom): in the text and in metadata
    assert "[user tool call u1] toggle_airplane_mode({})" in msgs[6].text
    assert msgs[6].metadata["tool_calls"][0]["function"] == "toggle_airplane_mode"
    assert msgs[7].role == "tool" and msgs[7].tool_call_id == "u1"
    calls = msgs[2].tool_calls
    assert [(c.id, c.function, c.arguments) for c in calls[:2]] == [
        ("c1", "get_weather", {"city": "Paris"}),
        ("c2", "get_time", {"tz": "CET"}),
    ]
    assert calls[2].parse_error and calls[2].function == "broken"
    assert [(m.role, m.tool_call_id, m.function) for m in msgs[3:5]] == [
        ("tool", "c1", "get_weather"),
        ("tool", "c2", "get_time"),
    ]
    # the same conversation stored in an agentic sample record survives write + read
    run = tmp_path / "run"
    (run / "samples").mkdir(parents=True)
    (run / "results.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "run_id": "run",
                "created": "2026-01-01T00:00:00+00:00",
                "finished": True,
                "model": {"spec": "replay:x.jsonl", "name": "x", "sha256": "ab" * 32},
                "seed": 0,
                "suites": {
                    "toy_tools": {
                        "status": "ok",
                        "score": 1.0,
                        "stderr": 0.0,
                        "n_items": 1,
                        "n_samples": 1,
                        "user_model": {"spec": "openai:http://127.0.0.1:1#u"},
                    }
                },
            }
        )
    )
    rec = {
        "suite": "toy_tools",
        "id": "t1",
        "sample": 0,
        "completion": "18C at noon.",
        "score": 1.0,
        "seed": 5,
        "details": {"messages": convo, "calls": 2},
    }
    (run / "samples" / "toy_tools.jsonl").write_text(json.dumps(rec) + "\n")
    log = inspect_log.read_eval_log(str(export_run(run).logs["toy_tools"]))
    (s,) = log.samples
    assert [m.role for m in s.messages] == [m["role"] for m in convo]
    assert [m.role for m in s.input] == ["system", "user"]
    assert s.messages[2].tool_calls[1].arguments == {"tz": "CET"}
    assert s.output.completion == "18C at noon." and s.scores["toy_tools"].metadata == {"calls": 2}
    assert log.eval.model_roles["user"].model == "openai:http://127.0.0.1:1#u"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_inspect_view_server_lists_and_serves_the_exported_logs(tmp_path: Path) -> None:
    out = _replay_run(tmp_path)
    port = _free_port()
    inspect = Path(sys.executable).with_name("inspect")
    if not inspect.is_file():
        pytest.skip("the inspect command is not installed beside this interpreter")
    proc = subprocess.Popen(
        [
            str(inspect),
            "view",
            "start",
            "--log-dir",
            str(out / "inspect"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/api"
    try:
        listing = None
        deadline = time.monotonic() + 300  # a hang, however loaded the host
        while listing is None and time.monotonic() < deadline:
            try:
                listing = _get(f"{base}/log-files")
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"inspect view exited: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.25)
        assert listing is not None, "inspect view did not answer in 300 s"
        tasks = sorted(f["task"] for f in listing["files"])
        assert tasks == ["aime24", "gpqa-diamond"]
        for entry in listing["files"]:
            log = _get(f"{base}/logs/{urllib.parse.quote(entry['name'], safe='')}")
            assert log["status"] == "success" and len(log["samples"]) == 6
            assert log["eval"]["metadata"]["model"]["sha256"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
