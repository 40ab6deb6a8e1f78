"""Whole training runs on the tiny model: the real loop, sandbox, TRL and checkpoints.

The pool is the check game ``even_reply`` (a random model wins about half the time, so
groups have variance) plus ``number_guess``; the designer ticket is the tiny model's own
(invalid) designs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from spade.eval.providers._checkpoint import resolve_checkpoint
from spade.train import load_recipe
from spade.train._run import run_training

from spade.cycle import without_timing
from spade.errors import UserError
from spade.identity import model_parts

pytestmark = pytest.mark.bwrap
pytest.importorskip("trl")


def test_tiny_run_trains_with_spade_advantages_and_checkpoints(
        tmp_path: Path, cache_env: Path) -> None:
    recipe = load_recipe("tiny").with_overrides(steps=2)
    run_dir = tmp_path / "run"
    summary = run_training(recipe, run_dir, say=lambda _: None, keep_trainer=True)
    assert summary.checkpoints == [2]
    log = summary.trainer.advantage_log
    assert [step for step, _, _ in log] == [0, 1]
    for _, trl_adv, spade_adv in log:
        assert trl_adv == pytest.approx(spade_adv, abs=1e-6)
    assert any(abs(a) > 0.1 for _, a, _ in log for a in a)  # groups with variance trained
    lines = [json.loads(x) for x in summary.metrics_path.read_text().splitlines()]
    assert [m["step"] for m in lines] == [0, 1]
    assert lines[0]["designer"]["designs"] == 4 and lines[1]["designer"] is None
    assert lines[0]["zero_variance"]["designer"]["n_groups"] == 1
    assert {"loss", "loss_agent", "loss_designer", "grad_norm", "kl", "entropy",
            "clip_fraction"} <= set(lines[0]["train"])
    assert {"generation_s", "environment_s", "validation_s", "update_s"} <= set(
        lines[0]["timing_s"])
    model_dir = resolve_checkpoint(f"{run_dir}@latest")
    assert model_dir == resolve_checkpoint(f"{run_dir}@best") == run_dir / "checkpoints/step-2"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja",
                 "run_state.db", "spade_checkpoint.json"):
        assert (model_dir / name).is_file(), name
    # training changes the weights only: config, tokenizer and template are the base's
    # bytes (a checkpoint whose weights never moved is the model it started from)
    base, trained = model_parts(cache_env / "models" / "tiny-llama-v1"), model_parts(model_dir)
    assert base["weights"] != trained["weights"]
    assert {k: v for k, v in trained.items() if k != "weights"} == {
        k: v for k, v in base.items() if k != "weights"}
    # a finished run's final checkpoint: nothing resumes it, so no optimiser state
    assert not (model_dir / "optimizer.pt").exists()
    assert json.loads((model_dir / "spade_checkpoint.json").read_text())["resume_state"] is False
    again = run_training(recipe, run_dir, say=lambda _: None)  # rerun = resume: done
    assert again.checkpoints == [2]
    with pytest.raises(UserError, match="optim"):
        run_training(recipe.with_overrides(**{"optim.lr": 0.5}), run_dir, say=lambda _: None)


def _cli(run_dir: Path, steps: int) -> list[str]:
    return [sys.executable, "-m", "spade.cli", "train", "--recipe", "tiny", "--steps",
            str(steps), "--run-dir", str(run_dir)]


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 1200) -> None:
    began = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - began < timeout, f"no {path}"
        time.sleep(0.2)


def _metrics(run_dir: Path) -> list[dict]:
    return [without_timing(json.loads(x))
            for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


@pytest.mark.slow
def test_sigkill_and_ctrl_c_then_resume_reproduce_the_uninterrupted_run(
        tmp_path: Path, cache_env: Path) -> None:
    env = {**os.environ, "SPADE_CACHE_DIR": str(cache_env)}
    straight, broken = tmp_path / "straight", tmp_path / "broken"
    done = subprocess.run(_cli(straight, 4), env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]

    proc = subprocess.Popen(_cli(broken, 4), env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _wait_for(broken / "checkpoints" / "step-2" / "spade_checkpoint.json", proc)
    proc.send_signal(signal.SIGKILL)  # at any moment after the first checkpoint
    proc.communicate(timeout=60)

    proc = subprocess.Popen(_cli(broken, 4), env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    began = time.monotonic()
    while _lines(broken / "metrics.jsonl") < 3:  # step 2 recomputed and committed
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - began < 1200
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "interrupted; resume with: spade train" in last and str(broken.resolve()) in last
    latest = resolve_checkpoint(f"{broken}@latest")
    assert latest.name in ("step-2", "step-4") and (latest / "model.safetensors").is_file()

    resumed = subprocess.run(_cli(broken, 4), env=env, capture_output=True, text=True,
                             timeout=1800)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _metrics(broken) == _metrics(straight)
    a = (straight / "checkpoints" / "step-4" / "model.safetensors").read_bytes()
    b = (broken / "checkpoints" / "step-4" / "model.safetensors").read_bytes()
    assert a == b


class _Stop(Exception):
    pass


def _stop_at(step: int) -> Any:
    def report(done: int, _: dict) -> None:
        if done == step:
            raise _Stop  # killed during step ``step``, after the checkpoints before it
    return report


def test_only_the_newest_checkpoint_keeps_resume_state_and_resume_still_matches(
        tmp_path: Path, cache_env: Path) -> None:
    recipe = load_recipe("tiny").with_overrides(**{"checkpoint.every": 1,
                                                   "checkpoint.keep_last": 3, "steps": 3})
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_training(recipe, straight, say=lambda _: None)
    with pytest.raises(_Stop):
        run_training(recipe, resumed, say=lambda _: None, report=_stop_at(2))
    d = [resumed / "checkpoints" / f"step-{n}" for n in (1, 2)]
    assert not (d[0] / "optimizer.pt").exists() and (d[0] / "model.safetensors").is_file()
    assert json.loads((d[0] / "spade_checkpoint.json").read_text())["resume_state"] is False
    assert (d[1] / "optimizer.pt").is_file() and (d[1] / "scheduler.pt").is_file()
    assert json.loads((d[1] / "spade_checkpoint.json").read_text())["resume_state"] is True
    run_training(recipe, resumed, say=lambda _: None)  # from step-2, with its optimiser
    for run in (straight, resumed):
        for n in (1, 2, 3):  # the older ones lost it, the finished run's last never had it
            d = run / "checkpoints" / f"step-{n}"
            assert not (d / "optimizer.pt").exists() and (d / "model.safetensors").is_file()
            assert json.loads((d / "spade_checkpoint.json").read_text())["resume_state"] is False
    assert _metrics(resumed) == _metrics(straight)
    a = (straight / "checkpoints" / "step-3" / "model.safetensors").read_bytes()
    assert a == (resumed / "checkpoints" / "step-3" / "model.safetensors").read_bytes()
    said: list[str] = []  # a finished run extended: its final weights, a fresh optimiser
    run_training(recipe.with_overrides(steps=4), straight, say=said.append)
    assert any("step-3 is the final checkpoint of a finished run" in x for x in said)
    assert (straight / "checkpoints" / "step-4" / "model.safetensors").is_file()
