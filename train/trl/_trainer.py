"""The GRPOTrainer subclass: live-model generation, per-role loss accounting, checkpoints
published through the shared driver, and the step callback that commits each step.

A micro-batch whose advantages are all 0 (zero-variance groups: common early in
self-play, and every group of a run that solves nothing) has a loss and a gradient of
exactly 0 under the advantage-linear losses without a KL term; its forward pass runs
without a graph (the logged metrics are the same) and its backward writes zeros, so
the weights after the step are bit for bit those of the full computation."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOTrainer

from train import _checkpoint as ckpt
from train._tickets import Role

_ROLE_CODE = {Role.DESIGNER: 0, Role.AGENT: 1}
#: TRL loss types whose per-token loss is the advantage times a clipped ratio
_ADVANTAGE_LINEAR_LOSSES = frozenset({"grpo", "bnpo", "dr_grpo", "dapo"})


def _zero_gradient_on(model: Any) -> Any:
    """0, as a loss whose backward writes a zero gradient into every trainable parameter
    (what a zero-advantage micro-batch contributes, at no cost)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.stack([p.reshape(-1)[0] for p in params]).sum() * 0.0


class SpadeGRPOTrainer(GRPOTrainer):
    """GRPOTrainer + what SPADE needs (see the module docstring).

    ``advantage_log`` keeps, per step, the advantages TRL computed next to the SPADE
    advantages of the same samples (the proof that they are the same numbers).
    """

    spade_driver: Any
    spade_samples: list[Any]
    spade_rollout_s: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.advantage_log: list[tuple[int, list[float], list[float]]] = []
        self.role_loss = {"designer": 0.0, "agent": 0.0}
        for quiet in (PrinterCallback, ProgressCallback):  # the driver reports progress
            self.remove_callback(quiet)
        self.add_callback(StepCallback(self))

    def live_generator(self) -> Any:
        """The rollout's generator: TRL's colocated vLLM engine (synced every step) or the
        trained model itself (``HFPolicy`` over the same module: never a stale copy)."""
        if self.use_vllm:
            from spade.policy import VLLMPolicy

            return VLLMPolicy(self.vllm_generation.llm, self.processing_class, name="trl-vllm")
        from spade.policy import HFPolicy

        return HFPolicy(self.model, self.processing_class, name="trl-live")

    def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
        out = super()._generate_and_score_completions(inputs)
        roles = [_ROLE_CODE[s.role] for s in self.spade_samples]
        out["spade_role"] = torch.tensor(roles, device=out["advantages"].device)
        self.advantage_log.append((self.state.global_step,
                                   out["advantages"].detach().cpu().tolist(),
                                   [s.advantage for s in self.spade_samples]))
        return out

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        self._last_logps = result[0]  # the loss pass's log-probs, for the role accounting
        return result

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self._last_logps = None
        if self._carries_no_gradient(inputs):
            with torch.no_grad():  # the same forward pass and metrics, without the graph
                loss = super()._compute_loss(model, inputs)
            loss = loss.detach() + _zero_gradient_on(model)
        else:
            loss = super()._compute_loss(model, inputs)
        self._account_roles(inputs, self._last_logps)
        self._last_logps = None
        return loss

    def _carries_no_gradient(self, inputs: dict[str, Any]) -> bool:
        """Whether the micro-batch's loss and gradient are exactly 0: every advantage is 0
        (a zero-variance group), the surrogate is a multiple of the advantage, and there
        is no KL or auxiliary term. Such a micro-batch needs no backward pass; its
        gradient is still written (zeros), so the optimiser step is the same."""
        return (self.beta == 0.0 and not self.aux_loss_enabled
                and self.loss_type in _ADVANTAGE_LINEAR_LOSSES
                and not (self.is_deepspeed_enabled or self.is_fsdp_enabled)
                and not bool(inputs["advantages"].any()))

    def _account_roles(self, inputs: dict[str, Any], logps: Any) -> None:
        """The clipped surrogate restricted to each role's tokens, divided by all trained
        tokens of the micro-batch, averaged over the step's micro-batches. A logged number
        per role (zero exactly when the role's tokens carry no advantage); its scale follows
        the micro-batch, not TRL's step-level normaliser, so it is not an exact share of
        ``loss``."""
        if logps is None or "spade_role" not in inputs:
            return
        with torch.no_grad():
            mask = inputs["completion_mask"]
            if "tool_mask" in inputs:
                mask = mask * inputs["tool_mask"]
            logps = logps.detach()
            old = inputs.get("old_per_token_logps")
            old = logps if old is None else old
            ratio = torch.exp(logps - old)
            adv = inputs["advantages"].unsqueeze(1)
            clipped = torch.clamp(ratio, 1 - self.epsilon_low, 1 + self.epsilon_high)
            per_token = -torch.min(ratio * adv, clipped * adv) * mask
            total = mask.sum().clamp(min=1.0)
            accum = self.args.gradient_accumulation_steps
            for name, code in (("designer", 0), ("agent", 1)):
                rows = inputs["spade_role"] == code
                self.role_loss[name] += float(per_token[rows].sum() / total) / accum

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        """HF writes ``.hf-staging/checkpoint-N``; the driver publishes it as ``step-N``."""
        super()._save_checkpoint(model, trial)
        step = self.state.global_step
        written = Path(str(self.args.output_dir)) / f"checkpoint-{step}"
        run_dir = self.spade_driver.run_dir
        staging = ckpt.staging_dir(run_dir, step)
        shutil.rmtree(staging, ignore_errors=True)
        os.replace(written, staging)
        self.spade_driver.checkpoint(step, staging)


#: TRL/HF log keys -> the ``train`` block of a step's metrics line.
_TRAIN_KEYS = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr",
               "entropy": "entropy", "kl": "kl", "clip_ratio/region_mean": "clip_fraction",
               "clip_ratio/low_mean": "clip_fraction_low",
               "clip_ratio/high_mean": "clip_fraction_high"}


class StepCallback(TrainerCallback):
    """Times each step and commits it through the driver once TRL has logged it."""

    def __init__(self, trainer: SpadeGRPOTrainer) -> None:
        self.trainer = trainer
        self._began = time.perf_counter()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._began = time.perf_counter()
        self.trainer.role_loss = {"designer": 0.0, "agent": 0.0}

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not logs or "loss" not in logs:
            return
        t = self.trainer
        train = {name: float(logs[key]) for key, name in _TRAIN_KEYS.items() if key in logs}
        train["loss_designer"] = t.role_loss["designer"]
        train["loss_agent"] = t.role_loss["agent"]
        train.setdefault("kl", 0.0)
        update_s = max(0.0, time.perf_counter() - self._began - t.spade_rollout_s)
        t.spade_driver.complete(state.global_step - 1, train, update_s)
