"""Memory-safe OpenRLHF settings for every paper recipe, and the per-GPU estimate the dry
run shows (OpenRLHF's own split of a rollout is checked against it in
test_openrlhf_memory_contract.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spade.train.openrlhf import Layout, command, disk_estimate, memory_estimate, unsupported
from spade.train.openrlhf._memory import GIB, microbatch_tokens
from spade.train.recipe import load_recipe

from spade.errors import UserError

PAPER = [f"{s}_qwen3_{m}" for s in ("games", "tool_use") for m in ("4b", "8b", "30b_a3b")]


@pytest.mark.parametrize("name", PAPER)
def test_paper_recipes_pack_cap_tokens_and_checkpoint(name: str, tmp_path: Path) -> None:
    r = load_recipe(name)
    assert unsupported(r) == []
    args = command(r, Layout(tmp_path, "/m"), "0.11.2")
    for flag in ("--ds.packing_samples", "--train.dynamic_batch_enable",
                 "--actor.gradient_checkpointing_enable"):
        assert flag in args, flag
    cap = str(r.cluster.max_tokens_per_gpu)
    assert args[args.index("--train.max_tokens_per_gpu") + 1] == cap
    assert args[args.index("--rollout.max_tokens_per_gpu") + 1] == cap
    est = memory_estimate(r)
    assert est["fits"], (name, est["peak_gib"])
    assert est["peak_gib"] <= 0.9 * r.cluster.gpu_memory_gb
    assert disk_estimate(r)["total_gb"] > 0


def test_the_old_micro_batch_of_four_does_not_fit() -> None:
    """Four unpacked 32k sequences per micro-batch: the log-prob pass alone materialises
    4 x 32768 x 151936 logits in bf16 and fp32 (111 GiB), which the estimate refuses."""
    r = load_recipe("games_qwen3_4b").with_overrides(**{
        "cluster.max_tokens_per_gpu": None, "cluster.packing": False,
        "grpo.micro_batch_size": 4})
    est = memory_estimate(r)
    assert est["logprob_pass"]["logits_gib"] == pytest.approx(
        4 * 32768 * 151936 * 6 / GIB, abs=0.01)
    assert round(est["logprob_pass"]["logits_gib"]) == 111
    assert not est["fits"]


def test_token_bounds_follow_openrlhf_rules() -> None:
    r = load_recipe("games_qwen3_4b")
    cap, max_len = r.cluster.max_tokens_per_gpu, r.cluster.max_len
    assert cap is not None
    # several actors: the log-prob pass rounds micro-batches down to a multiple of them
    assert microbatch_tokens(r) == {"logprob": max(2 * cap, max_len), "train": max(cap, max_len)}
    one = r.with_overrides(**{"cluster.gpus_per_node": 1})
    assert microbatch_tokens(one)["logprob"] == max(cap, max_len)
    ring = r.with_overrides(**{"cluster.ring_attn_size": 2})
    assert memory_estimate(ring)["tokens_per_gpu"]["train"] == max(2 * cap, max_len) // 2


def test_uneven_batches_and_several_nodes_are_refused() -> None:
    r = load_recipe("games_qwen3_4b")
    assert any("split evenly" in u for u in unsupported(
        r.with_overrides(**{"cluster.gpus_per_node": 5})))  # 192 samples over 5 GPUs
    assert any(u.startswith("cluster.nodes") for u in unsupported(
        r.with_overrides(**{"cluster.nodes": 2})))
    with pytest.raises(UserError, match="must equal"):
        r.with_overrides(**{"cluster.vllm_engines": 4})  # colocated: every GPU an engine


def test_dry_run_resolves_the_model_path_and_shows_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from spade.cli import main

    monkeypatch.setenv("SPADE_QWEN3_8B", str(tmp_path / "Qwen3-8B"))
    assert main(["train", "--recipe", "games_qwen3_8b", "--backend", "openrlhf",
                 "--dry-run", "--run-dir", str(tmp_path / "run")]) == 0
    report = json.loads(capsys.readouterr().out)["openrlhf"]
    assert "${" not in report["command"] and str(tmp_path / "Qwen3-8B") in report["command"]
    assert report["memory_per_gpu"]["fits"] is True
    assert report["batching"]["dynamic_batch"] and report["batching"]["packing"]
    assert report["disk"]["total_gb"] > 0
    assert "spade.train.openrlhf._job" in report["ray_job_submit"]
    monkeypatch.delenv("SPADE_QWEN3_8B")
    assert main(["train", "--recipe", "games_qwen3_8b", "--backend", "openrlhf",
                 "--dry-run", "--run-dir", str(tmp_path / "run")]) == 0
    report = json.loads(capsys.readouterr().out)["openrlhf"]
    assert "SPADE_QWEN3_8B is not set" in report["model_path"]
