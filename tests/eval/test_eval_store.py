"""Replay round trips, resumable runs, missing data and the results contract."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest
from _evalrun import cli, data_dir, results, samples, subprocess_cli


def _replay_file(tmp_path: Path, suites: dict[str, int], samples_per: int) -> Path:
    """A replay file answering correctly on even samples and wrongly on odd ones."""
    from spade.eval._protocol import build
    from spade.eval.data import DataDir
    from spade.eval.suites import SUITES

    lines = []
    for sid, limit in suites.items():
        suite = SUITES.get(sid)(build(sid, {"samples": samples_per, "limit": limit}), 0)
        for item in suite.select(suite.load(DataDir(data_dir())).items):
            for s in range(samples_per):
                text = suite.oracle(item, s) if s % 2 == 0 else "I give up. \\boxed{-1} ANSWER: Z"
                lines.append({"suite": sid, "id": item.id, "sample": s, "completion": text})
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_replay_round_trip(tmp_path: Path) -> None:
    replay = _replay_file(tmp_path, {"aime24": 10, "gpqa_diamond": 10}, 2)
    out = tmp_path / "run"
    args = ["--model", f"replay:{replay}", "--suites", "aime24,gpqa_diamond", "--samples", "2",
            "--limit", "10", "--data-dir", str(data_dir())]
    assert cli(*args, "--out", str(out)) == 0
    res = results(out)
    for sid in ("aime24", "gpqa_diamond"):
        e = res["suites"][sid]
        assert e["score"] == 0.5 and e["n_items"] == 10 and e["metric"] == "avg@2"
        assert e["stderr"] == 0.0 and e["ci95"] == [0.5, 0.5]
    # re-score the run's own completions: identical per-sample records
    # in the first replay file's order (the run batches by prompt length), so that the two
    # replay files are the same bytes
    order = [(x["suite"], str(x["id"]), x["sample"]) for x in map(json.loads,
             replay.read_text().splitlines())]
    recs = sorted(samples(out, "aime24") + samples(out, "gpqa_diamond"),
                  key=lambda r: order.index((r["suite"], str(r["id"]), r["sample"])))
    replay2 = tmp_path / "replay2.jsonl"
    replay2.write_text("".join(json.dumps({k: r[k] for k in ("suite", "id", "sample",
                                                           "completion")}) + "\n" for r in recs))
    out2 = tmp_path / "run2"
    assert cli(*[a if a != f"replay:{replay}" else f"replay:{replay2}" for a in args],
               "--out", str(out2)) == 0
    strip = lambda rs: [{k: v for k, v in r.items() if k != "time_s"} for r in rs]  # noqa: E731
    assert strip(samples(out2, "aime24")) == strip(samples(out, "aime24"))
    assert results(out2)["model"]["sha256"] == results(out)["model"]["sha256"]  # same bytes


def test_replay_missing_completion_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = _replay_file(tmp_path, {"aime24": 3}, 2)
    lines = replay.read_text().splitlines()
    replay.write_text("\n".join(lines[:-1]) + "\n")  # drop id 62 sample 1
    out = tmp_path / "run"
    rc = cli("--model", f"replay:{replay}", "--suites", "aime24", "--samples", "2", "--limit", "3",
             "--out", str(out), "--data-dir", str(data_dir()))
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lacks 1 completion" in err[0] and "sample=1" in err[0]
    assert not (out / "samples" / "aime24.jsonl").exists()  # nothing scored as zero
    entry = results(out)["suites"]["aime24"]
    assert entry["status"] == "missing" and "score" not in entry  # no score from nothing
    assert entry["missing_reason"] == "interrupted before its first scored sample"


def test_missing_data_exits_2_and_keeps_the_other_suites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "partial-data"
    (data / "aime").mkdir(parents=True)
    shutil.copy(data_dir() / "aime" / "aime24.jsonl", data / "aime" / "aime24.jsonl")
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "aime24,gpqa_diamond", "--samples", "1",
               "--out", str(out), "--data-dir", str(data)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing data" in err[0] and "gpqa_diamond" in err[0]
    res = results(out)
    assert res["finished"] is False
    assert res["suites"]["aime24"]["status"] == "ok" and res["suites"]["aime24"]["score"] == 1.0
    e = res["suites"]["gpqa_diamond"]
    assert e["status"] == "missing" and e["missing_file"] == str(data / "gpqa/gpqa_diamond.csv")
    assert "score" not in e
    missing_lcb = str(tmp_path / "no-such-lcb")
    assert cli("--model", "oracle", "--suites", "aime24,livecodebench", "--samples", "1",
               "--out", str(tmp_path / "lcb"), "--data-dir", str(data),
               "--lcb-files", missing_lcb) == 2
    assert "no-such-lcb" in capsys.readouterr().err
    assert results(tmp_path / "lcb")["suites"]["aime24"]["status"] == "ok"


def test_manifest_mismatch_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = data_dir()
    data = tmp_path / "data"
    (data / "aime").mkdir(parents=True)
    text = (src / "aime" / "aime24.jsonl").read_text()
    (data / "aime" / "aime24.jsonl").write_text(text.replace('"answer":"204"', '"answer":"205"'))
    (data / "MANIFEST.sha256").write_text((src / "MANIFEST.sha256").read_text())
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "aime24", "--samples", "1", "--out", str(out),
               "--data-dir", str(data)) == 0
    assert results(out)["suites"]["aime24"]["data"][0]["manifest"] == "mismatch"
    assert "does not match MANIFEST.sha256" in capsys.readouterr().err
    # the paper protocol on altered bytes is not comparable, and says why
    paper = tmp_path / "paper"
    assert cli("--model", "oracle", "--suites", "aime24", "--out", str(paper),
               "--data-dir", str(data)) == 0
    e = results(paper)["suites"]["aime24"]
    assert e["protocol"]["name"] == "paper" and e["comparable"] is False
    assert "aime/aime24.jsonl" in e["not_comparable"]
    clean = tmp_path / "clean"
    assert cli("--model", "oracle", "--suites", "aime24", "--out", str(clean),
               "--data-dir", str(src)) == 0
    assert results(clean)["suites"]["aime24"]["comparable"] is True


def test_results_contract_fields(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("--model", "oracle", "--suites", "aime25", "--samples", "1", "--limit", "4",
               "--out", str(out), "--data-dir", str(data_dir()), "--label", "Oracle row") == 0
    res = results(out)
    assert res["schema_version"] == 1 and res["run_id"] == "run" and res["finished"] is True
    assert res["method"] == "Oracle row" and res["model"]["spec"] == "oracle"
    assert set(res["code_version"]) == {"spade", "git_commit", "git_dirty"}
    e = res["suites"]["aime25"]
    for key in ("status", "score", "stderr", "ci95", "n_items", "n_samples", "metric",
                "protocol", "data", "comparable", "timing_s"):
        assert key in e
    assert e["protocol"]["limit"] == 4 and e["protocol"]["samples"] == 1
    rec = samples(out, "aime25")[0]
    assert {"suite", "id", "sample", "prompt_hash", "completion", "extracted", "score"} <= set(rec)
    assert rec["id"] == "I-1"  # the id as in the data file


def test_rerun_with_other_arguments_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    base = ["--model", "oracle", "--suites", "aime24", "--limit", "2", "--out", str(out),
            "--data-dir", str(data_dir())]
    assert cli(*base, "--samples", "1") == 0
    assert cli(*base, "--samples", "2") == 2
    assert cli(*base, "--samples", "1") == 0  # same arguments: resumes (nothing to do)


def test_a_resume_under_other_code_is_recorded(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The code that made a run stays its code_version; later code that resumed it is
    listed, so a run whose samples two versions made says so."""
    import spade.eval._runner as runner

    out = tmp_path / "run"
    base = ["--model", "oracle", "--suites", "aime24", "--samples", "1", "--out", str(out),
            "--data-dir", str(data_dir())]
    assert cli(*base, "--limit", "2") == 0
    first = results(out)["code_version"]
    assert "code_versions" not in results(out)
    assert cli(*base, "--limit", "2") == 0  # same code: nothing new to record
    assert "code_versions" not in results(out)
    later = {"spade": "9.9", "git_commit": "f" * 40, "git_dirty": False}
    monkeypatch.setattr(runner, "code_version", lambda: later)
    assert cli(*base, "--limit", "2") == 0
    res = results(out)
    assert res["code_version"] == first and res["code_versions"] == [first, later]


def _strip(recs: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "time_s"} for r in recs),
                  key=lambda r: (str(r["id"]), r["sample"]))


def test_killed_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    replay = _replay_file(tmp_path, {"aime24": 30, "aime25": 30}, 3)
    common = ["--suites", "aime24,aime25", "--samples", "3", "--data-dir", str(data_dir()),
              "--batch-size", "3"]
    straight = tmp_path / "straight"
    assert cli("--model", f"replay:{replay}", *common, "--out", str(straight)) == 0

    out = tmp_path / "killed"
    # 0.1 s per request: the kill, sent once 30 of aime24's 90 samples are written, has
    # 6 s to land mid-suite, however late a busy host runs this poll
    slow = ["--model", f"replay:{replay}#delay_s=0.1", *common, "--out", str(out)]
    proc = subprocess_cli(*slow)
    target = out / "samples" / "aime24.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if target.is_file() and target.read_text().count("\n") >= 30:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = target.read_text().count("\n")
    assert 30 <= before < 90, "the run was not interrupted mid-suite"
    assert not (out / "results.json").exists() or not results(out)["finished"]
    # a torn last line, as a kill during a write would leave
    with target.open("a") as fh:
        fh.write('{"suite": "aime24", "id": 99, "sam')

    proc = subprocess_cli(*slow)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"resuming: {before}/90 samples already done" in err
    a, b = results(straight), results(out)
    for sid in ("aime24", "aime25"):
        for key in ("score", "stderr", "ci95", "n_items", "n_samples", "status", "protocol"):
            assert a["suites"][sid][key] == b["suites"][sid][key], (sid, key)
        assert _strip(samples(out, sid)) == _strip(samples(straight, sid))
    assert b["finished"] is True


def test_samples_with_unicode_line_separators_resume(tmp_path: Path) -> None:
    """Samples are appended with raw non-ASCII: a completion holding U+2028 or U+0085
    is one record, not a corrupt line on resume."""
    from spade.eval.store import EvalStore

    store = EvalStore(tmp_path / "run")
    store.open({"suites": ["aime24"]})
    records = [{"id": "1", "sample": 0, "completion": "a\u2028b\x85c", "score": 1.0},
               {"id": "2", "sample": 0, "completion": "d", "score": 0.0}]
    store.append("aime24", records)
    assert list(store.load_samples("aime24").values()) == records
