"""The designer warm start on the tiny model: it lowers the reply loss, resumes after
kill -9 to exactly the weights of an unbroken stage, is not trained twice, and a whole
run records the data set's sha256 in its identity and its checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from spade.train import load_recipe

from spade.config import DesignerConfig
from spade.families import all_instances
from spade.families._pairs import jsonl_bytes, prompt_settings, render_pairs, sha256_of

torch = pytest.importorskip("torch")

STEPS = 6


def _data(folder: Path) -> Path:
    """A small set in the bundled format: short prompts (no corpus, memory or few-shot),
    every module taken as valid (the bundled set's validity is tested on its own)."""
    designer = DesignerConfig(prefill="skeleton", use_corpus=False, use_memory=False,
                              few_shot_examples=0)
    pairs, _ = render_pairs(all_instances(("sum_numbers", "letter_at")), designer, None, {},
                            seed=0, prompts_per_module=1, validate=lambda xs: [""] * len(xs))
    folder.mkdir(parents=True)
    data = jsonl_bytes(pairs)
    (folder / "warmstart.jsonl").write_bytes(data)
    (folder / "warmstart.json").write_text(json.dumps({
        "sha256": sha256_of(data), "pairs": len(pairs), "families_version": 1,
        "prompt": prompt_settings(designer)}))
    return folder


def _recipe(data: Path, steps: int = STEPS) -> dict[str, object]:
    return {"warm_start.enabled": True, "warm_start.data": str(data),
            "warm_start.steps": steps, "warm_start.batch_size": 2,
            "warm_start.checkpoint_every": 1, "warm_start.lr": 3e-3,
            "warm_start.max_tokens": 8000}


_CHILD = """
import json, sys, torch
from pathlib import Path
torch.set_num_threads(1)
from spade.train import load_recipe
from spade.train._models import load_model
from spade.train._warmstart import run_warm_start
model_dir, run_dir, overrides = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
recipe = load_recipe("tiny").with_overrides(**overrides)
model, tok = load_model(Path(model_dir), "cpu", "float32")
summary = run_warm_start(recipe, run_dir, model, tok, "cpu",
                         say=lambda s: print(s, flush=True))
torch.save(model.state_dict(), run_dir / "final.pt")
print("SUMMARY " + json.dumps(summary), flush=True)
"""


def _child(model_dir: Path, run_dir: Path, overrides: dict[str, object]) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(model_dir), str(run_dir),
                             json.dumps(overrides)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=Path(__file__).resolve().parents[2])


def _finish(proc: subprocess.Popen[str]) -> list[str]:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return out.splitlines()


def _summary(lines: list[str]) -> dict[str, object]:
    return dict(json.loads(next(x for x in lines if x.startswith("SUMMARY "))[8:]))


@pytest.mark.slow
def test_kill_9_mid_stage_then_resume_gives_the_unbroken_weights(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    data = _data(tmp_path / "data")
    overrides = _recipe(data)
    unbroken = tmp_path / "unbroken"
    whole = _summary(_finish(_child(tiny_model_dir, unbroken, overrides)))
    assert whole["steps"] == STEPS and whole["data_sha256"] == sha256_of(
        (data / "warmstart.jsonl").read_bytes())
    assert float(whole["final_loss"]) < float(whole["first_loss"])  # type: ignore[arg-type]

    broken = tmp_path / "broken"
    proc = _child(tiny_model_dir, broken, overrides)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("warm start step 3/"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not (broken / "warmstart" / "done.json").exists()
    saved = json.loads((broken / "warmstart" / "state" / "progress.json").read_text())
    assert 2 <= saved["step"] < STEPS

    lines = _finish(_child(tiny_model_dir, broken, overrides))
    assert any(x.startswith(f"warm start: resuming after step {saved['step']}/") for x in lines)
    resumed = _summary(lines)
    assert resumed["final_loss"] == whole["final_loss"]
    a = torch.load(unbroken / "final.pt", weights_only=True)
    b = torch.load(broken / "final.pt", weights_only=True)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)

    again = _finish(_child(tiny_model_dir, broken, overrides))  # done: weights loaded only
    assert any(x.startswith("warm start already done") for x in again)
    c = torch.load(broken / "final.pt", weights_only=True)
    assert all(torch.equal(a[k], c[k]) for k in a)


def test_edited_data_is_refused_in_one_line(tmp_path: Path) -> None:
    from spade.train._warmstart import load_data

    from spade.errors import UserError

    data = _data(tmp_path / "data")
    with (data / "warmstart.jsonl").open("a") as fh:
        fh.write("{}\n")
    recipe = load_recipe("tiny").with_overrides(**_recipe(data))
    with pytest.raises(UserError, match="does not match its manifest"):
        load_data(recipe.warm_start)


def test_paper_recipes_keep_it_off_and_their_identity() -> None:
    for name in ("paper_games", "paper_tool_use", "tiny"):
        recipe = load_recipe(name)
        assert not recipe.warm_start.enabled
        assert "warm_start" not in recipe.identity()


@pytest.mark.bwrap
def test_a_run_records_the_data_sha256(tmp_path: Path, cache_env: Path) -> None:
    pytest.importorskip("trl")
    from spade.train._run import run_training

    data = _data(tmp_path / "data")
    recipe = load_recipe("tiny").with_overrides(steps=2, **_recipe(data, steps=2))
    run_dir = tmp_path / "run"
    said: list[str] = []
    summary = run_training(recipe, run_dir, say=said.append)
    assert summary.checkpoints == [2]
    assert any(s.startswith("warm start step 2/2") for s in said)
    manifest = json.loads((run_dir / "checkpoints/step-2/spade_checkpoint.json").read_text())
    digest = sha256_of((data / "warmstart.jsonl").read_bytes())
    assert manifest["warm_start"]["data_sha256"] == digest
    assert (run_dir / "warmstart" / "metrics.jsonl").read_text().count("\n") == 2


def test_reply_loss_equals_the_full_logits_loss_and_gradient(tiny_model_dir: Path) -> None:
    """The head runs on the reply's positions only; loss and gradient are those of the whole
    sequence's logits with the prompt masked out."""
    from spade.train._models import load_model
    from spade.train._warmstart import _reply_loss

    model, _ = load_model(tiny_model_dir, "cpu", "float32")
    ids = torch.randint(0, model.config.vocab_size, (1, 40),
                        generator=torch.Generator().manual_seed(0))
    keep = 9
    ours = _reply_loss(model, ids, keep)
    ours.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    logits = model(input_ids=ids).logits[:, :-1].float()
    labels = ids[:, 1:].clone()
    labels[:, :-keep] = -100
    full = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1), ignore_index=-100,
                                             reduction="sum")
    full.backward()
    assert torch.allclose(ours, full, rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(grads, (p.grad for p in model.parameters()), strict=True):
        assert torch.allclose(mine, theirs, rtol=1e-4, atol=1e-6)
