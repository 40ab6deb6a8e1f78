"""TRL with ``model.use_vllm``: everything around the engine, on the CPU.

vLLM cannot run here, so after the trainer is built its colocated engine is stood in
(weight sync counted; generation is SPADE's rollout, as on a GPU, whose rollout_func
returns no sampling log-probs). TRL's own step then runs its vLLM code path: with the
importance-sampling correction the recipe's config switches off, a step trains; with
TRL's default it fails where it needs the sampling log-probs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spade.train import load_recipe

pytest.importorskip("torch")
pytest.importorskip("trl")


def test_the_config_sets_the_engine_from_the_recipe(tmp_path: Path) -> None:
    from spade.train.trl._backend import grpo_config

    recipe = load_recipe("tiny").with_overrides(**{
        "model.use_vllm": True, "model.device": "cuda", "cluster.max_len": 6144})
    cfg = grpo_config(recipe, tmp_path, "cpu")
    assert cfg.use_vllm and cfg.vllm_mode == "colocate"
    assert cfg.vllm_max_model_length == 6144  # not the model's own (262k for Qwen3-2507)
    assert cfg.vllm_importance_sampling_correction is False


class _Engine:
    """The colocated engine's trainer-facing side: weight syncs are counted."""

    def __init__(self) -> None:
        self.syncs = 0

    def sync_weights(self) -> None:
        self.syncs += 1


def _vllm_trainer(tmp_path: Path, model_dir: Path, correction: bool) -> tuple[Any, Any]:
    from test_trl_plumbing import ROWS, _trainer  # the plumbing tests' fixed rollout

    trainer, _driver = _trainer(tmp_path, model_dir, ROWS)
    engine = _Engine()
    trainer.use_vllm = True
    trainer.vllm_generation = engine
    trainer._last_loaded_step = -1
    trainer.vllm_importance_sampling_correction = correction
    return trainer, engine


def test_a_step_runs_on_the_vllm_path_without_sampling_logprobs(tmp_path: Path,
                                                                tiny_model_dir: Path) -> None:
    trainer, engine = _vllm_trainer(tmp_path, tiny_model_dir, correction=False)
    trainer.train()
    assert engine.syncs == 1  # the engine got the weights before the step's rollout
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert logged and all(abs(h["loss"]) < 1e6 for h in logged)


def test_trls_default_correction_needs_logprobs_the_rollout_cannot_give(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    trainer, _ = _vllm_trainer(tmp_path, tiny_model_dir, correction=True)
    with pytest.raises(TypeError, match="NoneType"):
        trainer.train()
