"""TRL's GRPOTrainer driven by the shared step loop (see the package docstring)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from spade.train import _checkpoint as ckpt
from spade.train._driver import StepDriver
from spade.train._tickets import Role
from spade.train.recipe import TrainRecipe

from spade.errors import UserError

__all__ = ["TRL_VERSION", "build_trainer", "train_with_trl"]

TRL_VERSION = "1.16.0"
#: Where the HF Trainer writes a checkpoint before it is published as step-N.
_HF_STAGING = ".hf-staging"


def _check_trl() -> None:
    try:
        import trl
    except ImportError:
        raise UserError(f"the trl backend needs trl=={TRL_VERSION}: "
                        "pip install 'spade-rl[train]'") from None
    if trl.__version__ != TRL_VERSION:
        raise UserError(f"the trl backend is written against trl=={TRL_VERSION} (its "
                        f"rollout_func hook is experimental); found {trl.__version__}")


def grpo_config(recipe: TrainRecipe, run_dir: Path, device: str, use_cache: bool = True
                ) -> Any:
    """TRL's GRPOConfig for a recipe: one generation per optimiser step, no reward scaling.
    ``use_cache``: the model config's own value, which the trainer would otherwise
    overwrite with False and save into every checkpoint's config.json (the update passes
    it per forward; only the saved config, and the model identity, would change)."""
    from trl import GRPOConfig

    g, o = recipe.grpo, recipe.optim
    samples = g.samples_per_step
    dtype = recipe.model.dtype
    return GRPOConfig(
        output_dir=str(run_dir / ckpt.CHECKPOINTS / _HF_STAGING),
        max_steps=recipe.steps,
        per_device_train_batch_size=g.micro_batch_size,
        gradient_accumulation_steps=samples // g.micro_batch_size,
        num_generations=g.group_size,
        generation_batch_size=samples,
        num_iterations=1,
        learning_rate=o.lr, weight_decay=o.weight_decay, adam_beta1=o.adam_beta1,
        adam_beta2=o.adam_beta2, max_grad_norm=o.max_grad_norm,
        lr_scheduler_type=o.scheduler, warmup_steps=o.warmup_steps,
        beta=g.kl_coef, epsilon=g.clip_low, epsilon_high=g.clip_high, loss_type=g.loss_type,
        scale_rewards="none", temperature=recipe.temperature, disable_dropout=True,
        mask_truncated_completions=False, shuffle_dataset=False,
        use_cpu=device == "cpu", bf16=device != "cpu" and dtype in ("auto", "bfloat16"),
        fp16=device != "cpu" and dtype == "float16",
        gradient_checkpointing=recipe.model.gradient_checkpointing,
        use_vllm=recipe.model.use_vllm, vllm_mode="colocate",
        # vLLM's context: a whole episode (prompt plus every turn), not the model's maximum
        # (262k for Qwen3-2507, whose KV cache would take most of the engine's share)
        vllm_max_model_length=recipe.cluster.max_len,
        # rollout_func returns no sampling log-probs (an episode interleaves environment
        # tokens); the samples are on-policy (weights synced before every rollout)
        vllm_importance_sampling_correction=False,
        logging_steps=1, save_strategy="steps", save_steps=recipe.checkpoint.every,
        save_only_model=False, report_to="none", disable_tqdm=True, seed=recipe.seed,
        data_seed=recipe.seed, log_completions=False, remove_unused_columns=False,
        use_cache=use_cache,
    )


def _advantage_reward(prompts: list[Any], completions: list[Any], spade_advantage: list[float],
                      **_: Any) -> list[float]:
    """The reward TRL normalises: SPADE's advantage itself (group mean 0, no scaling)."""
    return [float(a) for a in spade_advantage]


def build_trainer(recipe: TrainRecipe, driver_factory: Any, model: Any, tokenizer: Any,
                  run_dir: Path, device: str) -> Any:
    """A GRPOTrainer whose rollout executes SPADE tickets; ``driver_factory(generator)``
    builds the :class:`StepDriver` once the live generator exists."""
    _check_trl()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import warnings

    from datasets import Dataset

    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.* is deprecated")

    from spade.train.trl._trainer import SpadeGRPOTrainer

    slots = Dataset.from_dict({"prompt": [f"ticket-{k}" for k in range(
        recipe.grpo.tickets_per_step)]})
    trainer = SpadeGRPOTrainer(
        model=model, processing_class=tokenizer, reward_funcs=[_advantage_reward],
        args=grpo_config(recipe, run_dir, device,
                         bool(getattr(model.config, "use_cache", True))),
        train_dataset=slots,
        rollout_func=_rollout_func,
    )
    trainer.spade_forward_tokens = recipe.grpo.forward_tokens
    trainer.spade_driver = driver_factory(trainer.live_generator())
    return trainer


def _rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
    """TRL's hook: the tickets of the coming step, one completion per prompt element."""
    if trainer.accelerator.num_processes != 1:
        raise UserError("the trl backend runs on one process; use the openrlhf backend "
                        "for several GPUs")
    driver: StepDriver = trainer.spade_driver
    step = trainer.state.global_step
    began = time.perf_counter()
    samples = driver.samples(driver.rollout(step))
    trainer.spade_rollout_s = time.perf_counter() - began
    if len(samples) != len(prompts):
        raise RuntimeError(f"step {step}: {len(samples)} samples for {len(prompts)} prompts")
    trainer.spade_samples = samples
    return {
        "prompt_ids": [list(s.prompt_ids) for s in samples],
        "completion_ids": [list(s.completion_ids) for s in samples],
        "logprobs": None,
        "env_mask": [list(s.env_mask) for s in samples],
        "spade_advantage": [s.advantage for s in samples],
        "spade_role": [1 if s.role is Role.AGENT else 0 for s in samples],
    }


def train_with_trl(recipe: TrainRecipe, run_dir: Path, driver_factory: Any, model: Any,
                   tokenizer: Any, device: str, resume_from: Path | None) -> Any:
    """Train until ``recipe.steps`` (resuming from a published checkpoint if given)."""
    trainer = build_trainer(recipe, driver_factory, model, tokenizer, run_dir, device)
    shutil.rmtree(run_dir / ckpt.CHECKPOINTS / _HF_STAGING, ignore_errors=True)
    say = trainer.spade_driver.say
    if resume_from is not None and not ckpt.has_resume_state(resume_from) and say:
        say(f"{resume_from.name} is the final checkpoint of a finished run (no optimiser "
            "state): continuing from its weights with a fresh optimiser and schedule")
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    return trainer
