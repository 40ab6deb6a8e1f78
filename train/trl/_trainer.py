"""The GRPOTrainer subclass: live-model generation, per-role loss accounting, checkpoints
published through the shared driver, and the step callback that commits each step.

A micro-batch whose advantages are all 0 (zero-variance groups: common early in
self-play, and every group of a run that solves nothing) has a loss and a gradient of
exactly 0 under the advantage-linear losses without a KL term; its forward pass runs
without a graph (the logged metrics are the same) and its backward writes zeros, so
the weights after the step are bit for bit those of the full computation.

Each micro-batch runs only its real tokens (see ``spade.train.trl._update``): padding columns
trimmed, rows in length-sorted sub-batches of at most ``forward_tokens`` tokens with their
own backward pass, log-probabilities at the completion tokens only."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from spade.train import _checkpoint as ckpt
from spade.train._tickets import Role
from spade.train.trl import _update
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOTrainer

_ROLE_CODE = {Role.DESIGNER: 0, Role.AGENT: 1}
#: TRL loss types whose per-token loss is the advantage times a clipped ratio
_ADVANTAGE_LINEAR_LOSSES = frozenset({"grpo", "bnpo", "dr_grpo", "dapo"})


def _zero_gradient_on(model: Any) -> Any:
    """0, as a loss whose backward writes a zero gradient into every trainable parameter
    (what a zero-advantage micro-batch contributes, at no cost)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.stack([p.reshape(-1)[0] for p in params]).sum() * 0.0


def _loss_mask(inputs: dict[str, Any]) -> Any:
    """The trained tokens of a batch: real completion tokens minus environment tokens."""
    mask = inputs["completion_mask"]
    return mask * inputs["tool_mask"] if "tool_mask" in inputs else mask


class SpadeGRPOTrainer(GRPOTrainer):
    """GRPOTrainer + what SPADE needs (see the module docstring).

    ``advantage_log`` keeps, per step, the advantages TRL computed next to the SPADE
    advantages of the same samples (the proof that they are the same numbers).
    """

    spade_driver: Any
    spade_samples: list[Any]
    spade_rollout_s: float
    #: Tokens (rows x longest row) per forward pass of the update.
    spade_forward_tokens: int = 4096

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

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: Any,
                                           attention_mask: Any, logits_to_keep: int,
                                           batch_size: int | None = None,
                                           compute_entropy: bool = False,
                                           compute_aux_loss: bool = False, **extra: Any) -> Any:
        """TRL's numbers, computed at the completion tokens only (text-only models with a
        plain LM head; anything else takes TRL's own path)."""
        result = None
        if (not compute_aux_loss and all(v is None for v in extra.values())
                and not getattr(self.args, "cast_lm_head_to_fp32", False)):
            result = self._completion_logps(model, input_ids, attention_mask, logits_to_keep,
                                            batch_size or input_ids.size(0), compute_entropy)
        if result is None:
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        self._last_logps = result[0]  # the loss pass's log-probs, for the role accounting
        return result

    def _completion_logps(self, model: Any, input_ids: Any, attention_mask: Any, keep: int,
                          rows: int, entropy: bool) -> Any:
        inner = self.accelerator.unwrap_model(model)
        logps, ents = [], []
        for start in range(0, input_ids.size(0), rows):
            ids, mask = input_ids[start:start + rows], attention_mask[start:start + rows]
            with self.accelerator.autocast():
                out = _update.completion_logps(inner, ids, mask, keep, self.temperature, entropy)
            if out is None:
                return None
            logps.append(out[0])
            ents.append(out[1])
        return (torch.cat(logps), torch.cat(ents) if entropy else None, None)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        inputs = _update.trim_padding(inputs)
        skip = self._carries_no_gradient(inputs)
        parts = self._sub_batches(inputs)
        total = float(_loss_mask(inputs).sum())
        where = self._say_update(inputs, parts, skip)
        if len(parts) == 1 and not self._too_long(inputs):
            loss = self._part_loss(model, inputs, skip, total)
            return loss.detach() + _zero_gradient_on(model) if skip else loss
        metrics = self._metrics["train"]
        marks = {k: len(v) for k, v in metrics.items()}
        losses, weights = [], []
        for k, rows in enumerate(parts):
            sub = inputs if len(parts) == 1 else _update.select_rows(inputs, rows)
            if k:
                self._say(f"{where}, part {k + 1}/{len(parts)}")
            with self._checkpointing(model, self._too_long(sub)):
                loss = self._part_loss(model, sub, skip, total)
                if not skip:
                    self.accelerator.backward(loss)
            losses.append(loss.detach())
            weights.append(float(_loss_mask(sub).sum()))
        _update.merge_metrics(metrics, marks, weights)
        loss = torch.stack(losses).sum()
        if skip:
            return loss + _zero_gradient_on(model)
        return loss.requires_grad_(True)  # the gradient is written; HF's backward adds nothing

    def _say(self, text: str) -> None:
        say = getattr(getattr(self, "spade_driver", None), "say", None)
        if say is not None:
            say(text)

    def _say_update(self, inputs: dict[str, Any], parts: list[list[int]], skip: bool) -> str:
        """A phase line per micro-batch (and per part): an update can take minutes."""
        accum = self.current_gradient_accumulation_steps
        rows = inputs["completion_ids"].size(0)
        tokens = int(inputs["prompt_mask"].sum() + inputs["completion_mask"].sum())
        where = f"update: micro-batch {self._step % accum + 1}/{accum}"
        how = "forward only, zero advantages" if skip else f"{len(parts)} part(s)"
        self._say(f"{where} ({rows} samples, {tokens} tokens, {how})")
        return where

    def _part_loss(self, model: Any, inputs: dict[str, Any], skip: bool, total: float) -> Any:
        """TRL's loss of (part of) a micro-batch, without a graph when it carries none."""
        self._last_logps = None
        with torch.no_grad() if skip else contextlib.nullcontext():
            loss = super()._compute_loss(model, inputs)
        self._account_roles(inputs, self._last_logps, total)
        self._last_logps = None
        return loss

    def _sub_batches(self, inputs: dict[str, Any]) -> list[list[int]]:
        """Rows per forward pass: one pass when the micro-batch fits ``forward_tokens`` or
        its loss does not split by rows (then TRL's own computation)."""
        lengths = _update.row_lengths(inputs)
        everything = [list(range(len(lengths)))]
        if len(lengths) * max(lengths) <= self.spade_forward_tokens or not self._splittable(inputs):
            return everything
        return _update.sub_batches(lengths, self.spade_forward_tokens)

    def _splittable(self, inputs: dict[str, Any]) -> bool:
        """Whether the loss is a sum over rows with a step-level normaliser and every logged
        number can be merged back (``dapo``, token-level ratios, no entropy terms)."""
        return (self.loss_type == "dapo" and not self.aux_loss_enabled
                and self.importance_sampling_level == "token"
                and self.top_entropy_quantile >= 1.0 and not self._entropy_bonus_enabled
                and self.off_policy_mask_threshold is None
                and not (self.is_deepspeed_enabled or self.is_fsdp_enabled)
                and _update.splittable(inputs))

    def _too_long(self, inputs: dict[str, Any]) -> bool:
        """A pass over the budget (a single row longer than ``forward_tokens``) keeps only
        the layer inputs and recomputes the rest in the backward pass."""
        if self.args.gradient_checkpointing or not self._splittable(inputs):
            return False
        lengths = _update.row_lengths(inputs)
        return len(lengths) * max(lengths) > self.spade_forward_tokens

    @contextlib.contextmanager
    def _checkpointing(self, model: Any, on: bool) -> Iterator[None]:
        if not on:
            yield
            return
        inner = self.accelerator.unwrap_model(model)
        kwargs = {"use_reentrant": False}
        if hasattr(inner, "activation_checkpointing_enable"):  # transformers >= 5.x's name
            inner.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            off = inner.activation_checkpointing_disable
        else:
            inner.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            off = inner.gradient_checkpointing_disable
        try:
            yield
        finally:
            off()

    def _carries_no_gradient(self, inputs: dict[str, Any]) -> bool:
        """Whether the micro-batch's loss and gradient are exactly 0: every advantage is 0
        (a zero-variance group), the surrogate is a multiple of the advantage, and there
        is no KL or auxiliary term. Such a micro-batch needs no backward pass; its
        gradient is still written (zeros), so the optimiser step is the same."""
        return (self.beta == 0.0 and not self.aux_loss_enabled
                and self.loss_type in _ADVANTAGE_LINEAR_LOSSES
                and not (self.is_deepspeed_enabled or self.is_fsdp_enabled)
                and not bool(inputs["advantages"].any()))

    def _account_roles(self, inputs: dict[str, Any], logps: Any, total: float) -> None:
        """The clipped surrogate restricted to each role's tokens, divided by all trained
        tokens of the micro-batch (``total``), averaged over the step's micro-batches. A
        logged number per role (zero exactly when the role's tokens carry no advantage);
        its scale follows the micro-batch, not TRL's step-level normaliser, so it is not
        an exact share of ``loss``."""
        if logps is None or "spade_role" not in inputs:
            return
        with torch.no_grad():
            mask = _loss_mask(inputs)
            logps = logps.detach()
            old = inputs.get("old_per_token_logps")
            old = logps if old is None else old
            ratio = torch.exp(logps - old)
            adv = inputs["advantages"].unsqueeze(1)
            clipped = torch.clamp(ratio, 1 - self.epsilon_low, 1 + self.epsilon_high)
            per_token = -torch.min(ratio * adv, clipped * adv) * mask
            accum = self.args.gradient_accumulation_steps
            for name, code in (("designer", 0), ("agent", 1)):
                rows = inputs["spade_role"] == code
                self.role_loss[name] += float(per_token[rows].sum() / max(total, 1.0)) / accum

    def _save_optimizer_and_scheduler(self, output_dir: str) -> None:
        """Not for the run's last step: a finished run is not resumed, so its final
        checkpoint is weights, tokenizer, RNG and run store (the AdamW moments are twice
        the weights in float32). Extending a finished run starts a fresh optimiser."""
        if (self.state.global_step >= self.state.max_steps
                and not (self.is_deepspeed_enabled or self.is_fsdp_enabled)):
            return
        super()._save_optimizer_and_scheduler(output_dir)

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
