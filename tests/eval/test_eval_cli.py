"""`spade eval run` / `report` / `regress` on bad input: one line on stderr, exit 2.

Runs use the oracle provider on a tiny synthetic AIME file, so no model and no shared data
are needed; the run-directory rule (implicit resume, --resume, --new-run) is exercised too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade.cli import main


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "aime").mkdir(parents=True)
    rows = [{"id": i, "problem": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(3)]
    (root / "aime" / "aime24.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _run(data: Path, out: Path, *extra: str) -> int:
    return main(["eval", "run", "--quiet", "--model", "oracle", "--suites", "aime24",
                 "--data-dir", str(data), "--out", str(out), *extra])


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


def test_binary_replay_file(tmp_path: Path, data: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    replay = tmp_path / "replay.jsonl"
    replay.write_bytes(BINARY)
    assert main(["eval", "run", "--quiet", "--model", f"replay:{replay}", "--suites", "aime24",
                 "--data-dir", str(data), "--out", str(tmp_path / "o")]) == 2
    assert "replay file" in _one_line(capsys)


def test_binary_and_corrupt_samples_file(tmp_path: Path, data: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert _run(data, out) == 0
    capsys.readouterr()
    samples = out / "samples" / "aime24.jsonl"
    good = samples.read_text().splitlines()
    samples.write_text(good[0] + "\n{not json\n" + "\n".join(good[1:]) + "\n")
    assert _run(data, out) == 2  # resuming must not silently drop the corrupt line
    assert f"{samples}:2" in _one_line(capsys)
    assert main(["report", str(out)]) == 0  # the report reads results.json ...
    capsys.readouterr()
    assert main(["regress", "--reference", str(out), "--candidate", str(out)]) == 2
    assert f"{samples}:2" in _one_line(capsys)  # ... the gate reads the samples
    samples.write_bytes(BINARY)
    assert _run(data, out) == 2
    assert "samples file" in _one_line(capsys)


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--dtype", "garbage"], "unknown dtype 'garbage'"),
        (["--temperature", "-1"], "--temperature"),
        (["--top-p", "5"], "--top-p"),
        (["--top-p", "0"], "--top-p"),
        (["--top-k", "-3"], "--top-k"),
        (["--samples", "0"], "--samples"),
        (["--limit", "-2"], "--limit"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--batch-size", "0"], "--batch-size"),
        (["--seed", "nan"], "--seed"),
        (["--temperature", "inf"], "--temperature"),
        (["--preset", "huge"], "--preset"),
        (["--resume", "--new-run"], "not allowed with"),
    ],
)
def test_bad_numbers_and_names_fail_at_parse_time(
        option: list[str], needle: str, tmp_path: Path, data: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(data, tmp_path / "o", *option) == 2
    assert needle in _one_line(capsys)
    assert not (tmp_path / "o").exists()


def test_out_pointing_at_a_file(tmp_path: Path, data: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert _run(data, target) == 2
    assert "not a directory" in _one_line(capsys)


def test_cuda_on_cpu_torch(tmp_path: Path, data: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["eval", "run", "--quiet", "--model", "smollm2", "--suites", "aime24",
                 "--device", "cuda", "--data-dir", str(data), "--out", str(tmp_path / "o")]) == 2
    assert "--device cuda" in _one_line(capsys)


def test_hub_id_and_unknown_spec(tmp_path: Path, data: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "run", "--quiet", "--suites", "aime24", "--data-dir", str(data),
            "--out", str(tmp_path / "o")]
    assert main([*args, "--model", "hf:Qwen/Qwen3-8B"]) == 2
    assert "only local model directories" in _one_line(capsys)
    assert main([*args, "--model", "gpt4"]) == 2
    err = _one_line(capsys)
    assert "smollm2" in err and "respond" not in err


def test_resume_rule(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert _run(data, out, "--resume") == 2
    assert "does not exist" in _one_line(capsys)
    assert _run(data, out) == 0
    assert _run(data, out) == 0  # same command: resumes (nothing left to do)
    assert _run(data, out, "--resume") == 0
    assert _run(data, out, "--seed", "1") == 2  # another identity: refused, says how
    assert "--new-run" in capsys.readouterr().err
    assert _run(data, out, "--seed", "1", "--new-run") == 0
    assert json.loads((tmp_path / "o.prev-1" / "results.json").read_text())["seed"] == 0
    assert json.loads((out / "results.json").read_text())["seed"] == 1


def test_default_out_is_deterministic(tmp_path: Path, data: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    base = ["eval", "run", "--quiet", "--model", "oracle", "--suites", "aime24",
            "--data-dir", str(data)]
    assert main(base) == 0
    assert main(base) == 0
    (run,) = (tmp_path / "runs" / "eval").iterdir()
    assert run.name.startswith("oracle-")
    assert main([*base, "--samples", "2"]) == 0
    assert len(list((tmp_path / "runs" / "eval").iterdir())) == 2


def test_preset_is_recorded(tmp_path: Path, data: Path) -> None:
    assert _run(data, tmp_path / "q", "--preset", "quick") == 0
    doc = json.loads((tmp_path / "q" / "results.json").read_text())
    assert doc["preset"] == "quick"
    assert doc["suites"]["aime24"]["protocol"]["samples"] == 1
    assert _run(data, tmp_path / "p") == 0  # oracle is not a local model: paper by default
    assert json.loads((tmp_path / "p" / "results.json").read_text())["preset"] == "paper"


def test_report_needs_a_run_and_counts_a_run_once(tmp_path: Path, data: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 2
    assert "RUN_DIR" in _one_line(capsys)
    out = tmp_path / "o"
    assert _run(data, out) == 0
    capsys.readouterr()
    assert main(["report", "--per-run", "--no-reference", "--format", "csv", str(out),
                 str(out / ".." / "o")]) == 0
    captured = capsys.readouterr()
    assert "counted once" in captured.err
    assert sum(",aime24," in line for line in captured.out.splitlines()) == 1
    assert main(["report", str(out), "--out", str(tmp_path)]) == 2
    assert "is a directory" in _one_line(capsys)


@pytest.mark.parametrize("bad", [["--min-effect", "-5"], ["--alpha", "0"], ["--alpha", "1.5"],
                                 ["--seed", "-1"]])
def test_regress_options(bad: list[str], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["regress", "--reference", str(tmp_path), "--candidate", str(tmp_path),
                 *bad]) == 2
    assert bad[0] in _one_line(capsys)


def test_interrupt_says_how_to_resume(tmp_path: Path, data: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    import spade.eval._runner

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(spade.eval._runner, "run_eval", interrupted)
    out = tmp_path / "o"
    assert _run(data, out, "--new-run") == 130
    err = _one_line(capsys)
    assert err.startswith("spade eval: interrupted; resume with: spade eval run --quiet")
    assert f"--out {out.resolve()}" in err and "--new-run" not in err


def test_without_model_the_newest_training_run_is_evaluated(
        tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import os

    from spade.eval.cli import latest_training_run

    monkeypatch.chdir(tmp_path)
    assert main(["eval", "run", "--quiet", "--data-dir", str(data)]) == 2
    assert "no --model given" in _one_line(capsys)
    for i, name in enumerate(("old", "new")):
        (tmp_path / "runs" / "train" / name / "checkpoints" / "step-1").mkdir(parents=True)
        os.utime(tmp_path / "runs" / "train" / name / "checkpoints", (i, i))
    assert latest_training_run(Path("runs/train")) == f"hf:{Path('runs/train/new')}@latest"
    assert main(["eval", "run", "--quiet", "--data-dir", str(data)]) == 2
    assert "no complete step-N checkpoint" in _one_line(capsys)  # the run was found and used


def test_sigterm_mid_run_prints_a_command_that_finishes_it(tmp_path: Path, data: Path) -> None:
    """A real process, a slow replay provider, SIGTERM halfway: exit 130 and one line with
    the exact command; running that command completes the run with every sample once."""
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(
        json.dumps({"suite": "aime24", "id": str(i), "sample": s,
                    "completion": f"\\boxed{{{2 * i}}}"}) + "\n"
        for i in range(3) for s in range(4)))
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "spade.cli", "eval", "run", "--model",
           f"replay:{replay}#delay_s=0.3", "--suites", "aime24", "--samples", "4",
           "--batch-size", "1", "--data-dir", str(data), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 300  # a hang, however slowly a busy host starts the run
    samples = out / "samples" / "aime24.jsonl"
    while not (samples.is_file() and samples.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "no sample written"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("spade eval: interrupted; resume with: spade eval run ")
    again = shlex.split(last.split("resume with: ", 1)[1])
    done = subprocess.run([sys.executable, "-m", "spade.cli", *again[1:]], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    keys = [(str(r["id"]), r["sample"]) for r in map(json.loads, samples.read_text().splitlines())]
    assert sorted(keys) == sorted({(str(i), s) for i in range(3) for s in range(4)})
    assert json.loads((out / "results.json").read_text())["suites"]["aime24"]["score"] == 1.0


def test_binary_results_file_in_report(tmp_path: Path, data: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert _run(data, out) == 0
    capsys.readouterr()
    (out / "results.json").write_bytes(BINARY)
    assert main(["report", str(out)]) == 2
    assert "results file" in _one_line(capsys)
