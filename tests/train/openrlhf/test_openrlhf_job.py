"""The remote route: ``spade train --backend openrlhf --prepare`` writes what a Ray job
needs with resolved paths, and the job entrypoint it prints runs the prepared command
(OpenRLHF itself, which cannot run here, is stood in for by a command that records how
it was started)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from spade.train.openrlhf import prepare_job
from spade.train.recipe import load_recipe

from spade.errors import UserError


def _recipe(model: str):  # type: ignore[no-untyped-def]
    return load_recipe("tiny").with_overrides(**{
        "backend": "openrlhf", "model.path": model, "model.device": "cuda",
        "model.dtype": "bfloat16", "cluster.gpus_per_node": 1})


def test_prepare_writes_the_job_with_resolved_paths(
        tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from spade.cli import main

    monkeypatch.setenv("SPADE_TEST_MODEL", str(tiny_model_dir))
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text("extends: tiny\nbackend: openrlhf\n"
                           "model: {path: '${SPADE_TEST_MODEL}', device: cuda, "
                           "dtype: bfloat16}\ncluster: {gpus_per_node: 1}\n")
    run_dir = tmp_path / "run"
    assert main(["train", "--recipe", str(recipe_file), "--prepare",
                 "--run-dir", str(run_dir)]) == 0
    out = capsys.readouterr().out
    job = json.loads(out.strip().rsplit("\n", 1)[0])
    submit = shlex.split(out.strip().splitlines()[-1])
    assert submit == job["ray_job_submit"]
    for name in ("run.json", "tickets.jsonl", "agent.py", "shared.db"):
        assert (run_dir / "openrlhf" / name).is_file(), name
    run = json.loads((run_dir / "openrlhf" / "run.json").read_text())
    text = json.dumps(run["argv"]) + (run_dir / "openrlhf" / "tickets.jsonl").read_text()
    assert "${" not in text and str(tiny_model_dir) in run["argv"]
    assert str(run_dir.resolve()) in text
    # the job's entrypoint: this module, this run dir, the project shipped without .nox
    assert submit[:3] == ["ray", "job", "submit"] and "--working-dir" in submit
    assert submit[-4:] == ["python", "-m", "spade.train.openrlhf._job", str(run_dir.resolve())]
    runtime = json.loads(submit[submit.index("--runtime-env-json") + 1])
    assert ".nox" in runtime["excludes"] and ".git" in runtime["excludes"]


def test_prepare_refuses_an_unset_model_variable(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPADE_QWEN3_8B", raising=False)
    with pytest.raises(UserError, match="SPADE_QWEN3_8B is not set"):
        prepare_job(load_recipe("games_qwen3_8b").with_overrides(backend="openrlhf"),
                    tmp_path / "run")


@pytest.mark.slow
def test_the_job_entrypoint_runs_the_prepared_command(tiny_model_dir: Path,
                                                      tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    prepare_job(_recipe(str(tiny_model_dir)), run_dir, say=lambda _: None)
    run_file = run_dir / "openrlhf" / "run.json"
    run = json.loads(run_file.read_text())
    marker = tmp_path / "started.json"
    stand_in = ("import json, sys; json.dump({'python': sys.executable, "
                f"'argv': sys.argv[1:]}}, open({str(marker)!r}, 'w'))")
    run["argv"] = [run["argv"][0], "-c", stand_in, *run["argv"][3:]]
    run_file.write_text(json.dumps(run))
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "spade.train.openrlhf._job", str(run_dir)],
                          capture_output=True, text=True, timeout=300, cwd=root, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    started = json.loads(marker.read_text())
    assert started["python"] == sys.executable
    assert "--train.agent_func_path" in started["argv"]
    assert json.loads(done.stdout.strip().splitlines()[-1])["last_published_step"] == 0
    bad = subprocess.run([sys.executable, "-m", "spade.train.openrlhf._job", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=root, env=env,
                         check=False)
    assert bad.returncode == 1 and "not a SPADE openrlhf run" in bad.stderr
