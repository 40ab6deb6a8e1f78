"""`spade selfplay` end to end (scripted policy, real sandbox): files, errors, resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from spade.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cycle"))
from _cycle_configs import TINY, write_config

ONE_CYCLE = {**TINY, "cycles": 1}


def _selfplay(*args: str) -> int:
    return main(["selfplay", *args])


@pytest.mark.needs("corpora")
def test_run_writes_metrics_and_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    run_dir = tmp_path / "run"
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir), "--cycles", "2") == 0
    err = capsys.readouterr().err
    assert "cycle 1/2" in err and "cycle 2/2" in err and "validating" in err
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["cycle"] for line in lines] == [0, 1]
    assert "store_write_s" in json.loads(lines[0])["timing_s"]
    index_text = (run_dir / "envs" / "envs.jsonl").read_text()
    index = [json.loads(line) for line in index_text.splitlines()]
    assert index and len(index) == sum(json.loads(line)["counts"]["valid"] for line in lines)
    for meta in index:
        assert (run_dir / "envs" / meta["file"]).is_file()
        assert json.loads((run_dir / "envs" / f"{meta['env_id']}.json").read_text()) == meta
        assert meta["hint"] and meta["skill"] and meta["doc_id"]
        assert 0.0 <= meta["solve_rate_hinted"] <= 1.0 and meta["regret"] >= 0.0
        assert meta["verdict"]["valid"] is True


@pytest.mark.needs("corpora")
def test_foreign_dir_is_refused_and_new_run_moves_it_aside(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine")
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert "not empty" in err and "--new-run" in err and "\n" not in err
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir), "--resume") == 2
    assert "holds no run" in capsys.readouterr().err
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir), "--new-run") == 0
    assert (tmp_path / "run.prev-1" / "notes.txt").read_text() == "mine"
    assert (run_dir / "metrics.jsonl").is_file()


@pytest.mark.needs("corpora")
def test_resume_of_a_missing_directory_is_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    assert _selfplay("--config", str(config), "--run-dir", str(tmp_path / "nope"),
                     "--resume") == 2
    err = capsys.readouterr().err.strip()
    assert "does not exist" in err and "\n" not in err
    assert not (tmp_path / "nope").exists()


@pytest.mark.needs("corpora")
def test_default_run_dir_is_derived_from_the_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    monkeypatch.chdir(tmp_path)
    assert _selfplay("--config", str(config)) == 0
    (run_dir,) = (tmp_path / "runs" / "selfplay").iterdir()
    assert run_dir.name.startswith("c-")
    assert _selfplay("--config", str(config), "--cycles", "2") == 0  # same dir: resumed
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2
    assert len(list((tmp_path / "runs" / "selfplay").iterdir())) == 1


@pytest.mark.needs("corpora")
def test_resume_extends_and_a_finished_run_is_left_alone(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    run_dir = tmp_path / "run"
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir)) == 0
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir),
                     "--cycles", "2") == 0  # the same directory resumes implicitly
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2
    before = (run_dir / "metrics.jsonl").read_bytes()
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir), "--resume") == 0
    assert (run_dir / "metrics.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("designer: {prompts_per_cycle: 0}", "prompts_per_cycle"),
        ("designer: {setting: chess}", "setting"),
        ("agent: [1, 2", "malformed YAML"),
        ("corpus: {path: does/not/exist.jsonl}", "exist.jsonl"),
        ("policy: {spec: 'nonsense:x'}", "expected one of: scripted | smollm2"),
    ],
)
def test_bad_config_is_one_line_exit_2(content: str, needle: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    base = yaml.safe_dump({k: v for k, v in ONE_CYCLE.items() if k not in content.split(":")[0]})
    config.write_text(base + content + "\n")
    assert _selfplay("--config", str(config), "--run-dir", str(tmp_path / "run")) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("spade selfplay: error:")]
    assert len(errors) == 1 and needle in errors[0] and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # nothing written: a fixed config can start fresh


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _selfplay("--config", str(tmp_path / "nope.yaml")) == 2
    assert "config file not found" in capsys.readouterr().err


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def test_binary_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_bytes(b"seed: 1\n\x00\x01\xff\xfe binary")
    assert _selfplay("--config", str(config), "--run-dir", str(tmp_path / "run")) == 2
    assert "binary" in _one_error_line(capsys)


def test_run_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert _selfplay("--run-dir", str(target)) == 2
    assert "not a directory" in _one_error_line(capsys)


@pytest.mark.parametrize("bad", [["--cycles", "0"], ["--cycles", "x"], ["--resume", "--new-run"]])
def test_bad_options_are_refused_at_parse_time(bad: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert _selfplay(*bad) == 2
    assert "spade selfplay: error:" in _one_error_line(capsys)


def test_hub_id_says_only_local_paths_work(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert _selfplay("--policy", "hf:SomeOrg/some-model", "--run-dir", str(tmp_path / "r")) == 2
    assert "only local model directories" in _one_error_line(capsys)


def test_unknown_policy_speaks_config_terms(capsys: pytest.CaptureFixture[str]) -> None:
    assert _selfplay("--policy", "gpt") == 2
    err = _one_error_line(capsys)
    assert "policy.spec" in err and "respond" not in err and "Value error" not in err


@pytest.mark.needs("corpora")
def test_weak_isolation_error_speaks_config_terms(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.yaml",
                          {**ONE_CYCLE, "sandbox": {"isolation": "rlimits"}})
    assert _selfplay("--config", str(config), "--run-dir", str(tmp_path / "run")) == 2
    err = _one_error_line(capsys)
    assert "sandbox.allow_weak: true" in err and "allow_weak=True" not in err


@pytest.mark.needs("corpora")
def test_the_resume_message_counts_cycles_as_the_progress_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.yaml", ONE_CYCLE)
    run_dir = tmp_path / "run"
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir)) == 0
    capsys.readouterr()
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir), "--cycles", "2") == 0
    err = capsys.readouterr().err
    # one cycle is done, so the run resumes after cycle 1 (of 2) and plays cycle 2/2
    assert "resuming after cycle 1 of 2" in err, err
    assert "cycle 2/2" in err and "cycle 1/2" not in err, err


def test_a_bad_corpus_line_is_named_before_the_run_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "a"}\n' * 50 + '["not", "an", "object"]\n', encoding="utf-8")
    config = write_config(tmp_path / "c.yaml", {**ONE_CYCLE, "corpus": {"path": str(corpus)}})
    run_dir = tmp_path / "run"
    assert _selfplay("--config", str(config), "--run-dir", str(run_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{corpus}:51" in err, err
    assert not run_dir.exists()
