"""The ``train_ppo_ray`` command line for a recipe, keyed by OpenRLHF version.

OpenRLHF renames its flags between releases (dotted names since 0.10.2; 0.11.2 replaced the
importance-sampling switches), so the command is generated from a map per supported
version, and every flag is then checked against the installed CLI's own parser
(``spade.train.openrlhf._cli``). An unknown version is refused rather than guessed.

How a recipe maps (0.11.2):

- one SPADE step = one OpenRLHF step: the prompt dataset holds ``tickets_per_step`` ticket
  slots, ``--rollout.batch_size`` is the same number and ``--train.num_episodes`` is the
  step count, so every episode is one pass over the slots, i.e. one step; the dataloader's
  shuffle only permutes the slots within a step;
- ``--rollout.n_samples_per_prompt`` = ``grpo.group_size`` (one ticket = one GRPO group);
  ``--train.batch_size`` = all samples of a step: one optimiser step per rollout, as in TRL;
- advantages: the executor returns SPADE's per-role GRPO advantage as the sample's reward
  and ``--algo.advantage.estimator dr_grpo`` only subtracts the group mean, which is
  already zero, so the advantage OpenRLHF applies is SPADE's (no batch whitening, which
  would mix the roles);
- ``grpo.kl_coef`` -> ``--algo.kl.init_coef`` (KL as a k3 loss term when non-zero, as TRL
  does; with 0 the reference model is dropped); clip ranges -> ``--actor.eps_clip_low_high``;
- memory: ``cluster.packing`` -> ``--ds.packing_samples``; ``cluster.max_tokens_per_gpu``
  -> dynamic batching with that per-GPU token cap for both the log-prob pass and the
  update (micro-batch sizes are then OpenRLHF's and the flags say 1);
  ``model.gradient_checkpointing`` -> ``--actor.gradient_checkpointing_enable``
  (``spade.train.openrlhf._memory`` estimates what a GPU holds);
- the final model goes to ``openrlhf/final`` (``--ckpt.output_dir``), not ``./ckpt``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spade.train.recipe import TrainRecipe

from spade.errors import UserError

__all__ = ["SUPPORTED", "Layout", "batching", "check_recipe", "command", "placement",
           "unsupported"]


@dataclass(frozen=True)
class Layout:
    """Files of an OpenRLHF run inside ``RUN_DIR/openrlhf/``."""

    run_dir: Path
    model_dir: str

    @property
    def root(self) -> Path:
        return self.run_dir / "openrlhf"

    @property
    def tickets(self) -> Path:
        return self.root / "tickets.jsonl"

    @property
    def agent(self) -> Path:
        return self.root / "agent.py"

    @property
    def recipe(self) -> Path:
        return self.root / "recipe.json"

    @property
    def ckpt(self) -> Path:
        return self.root / "ckpt"

    @property
    def final(self) -> Path:
        """Where OpenRLHF saves the model after its last step."""
        return self.root / "final"


_LOSS_AGG = {"dapo": "token-mean", "grpo": "seq-mean-token-mean"}
_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "auto": "bf16"}


def unsupported(recipe: TrainRecipe) -> list[str]:
    """Recipe fields OpenRLHF cannot honour, each as ``field: why`` (refused, never
    silently ignored)."""
    out = []
    if recipe.grpo.loss_type not in _LOSS_AGG:
        out.append(f"grpo.loss_type: {recipe.grpo.loss_type!r} has no OpenRLHF counterpart "
                   f"(use one of {sorted(_LOSS_AGG)})")
    if recipe.model.dtype not in _DTYPE:
        out.append(f"model.dtype: {recipe.model.dtype!r} (OpenRLHF trains in bf16 or fp16)")
    if recipe.model.device == "cpu":
        out.append("model.device: cpu (OpenRLHF needs GPUs; use the trl backend)")
    if recipe.model.freeze_designer:
        out.append("selfplay.policy.frozen_designer: initial: a second, frozen copy of the "
                   "weights is not served by OpenRLHF's engines")
    if recipe.selfplay.policy.frozen_designer is not None:
        out.append("selfplay.policy.frozen_designer: an external designer is not reachable "
                   "from the rollout actors")
    if recipe.optim.warmup_steps > recipe.steps:
        out.append("optim.warmup_steps: longer than the run")
    if recipe.cluster.nodes > 1:
        out.append(f"cluster.nodes: {recipe.cluster.nodes} nodes would all write the run's "
                   "shared state (RUN_DIR/openrlhf/shared.db and state.db, SQLite WAL, which "
                   "needs every writer on one host); train on one node")
    samples, gpus = recipe.grpo.samples_per_step, recipe.cluster.gpus
    gpus //= recipe.cluster.ring_attn_size  # data-parallel ranks
    per_gpu = gpus * (1 if recipe.cluster.max_tokens_per_gpu else recipe.grpo.micro_batch_size)
    if samples % per_gpu:
        out.append(f"grpo: {samples} samples per step do not split evenly over {gpus} GPUs"
                   + ("" if recipe.cluster.max_tokens_per_gpu else
                      f" x micro-batch {recipe.grpo.micro_batch_size}")
                   + " (DeepSpeed's batch arithmetic); change grpo.tickets_per_step")
    return out


def _scheduler(recipe: TrainRecipe) -> list[str]:
    o = recipe.optim
    name = {"constant": "constant_with_warmup", "linear": "linear",
            "cosine": "cosine"}[o.scheduler]
    ratio = o.warmup_steps / recipe.steps
    return ["--actor.lr_scheduler", name, "--actor.lr_warmup_ratio", f"{ratio:g}"]


def _placement_flags(recipe: TrainRecipe) -> list[str]:
    c = recipe.cluster
    args = ["--actor.num_nodes", str(c.nodes), "--actor.num_gpus_per_node",
            str(c.gpus_per_node), "--vllm.num_engines", str(c.engines),
            "--vllm.tensor_parallel_size", str(c.vllm_tensor_parallel),
            "--vllm.gpu_memory_utilization", f"{c.vllm_gpu_memory_utilization:g}",
            "--ds.zero_stage", str(c.zero_stage)]
    if recipe.grpo.kl_coef > 0:
        args += ["--ref.num_nodes", str(c.nodes), "--ref.num_gpus_per_node",
                 str(c.gpus_per_node)]
    if c.colocate:
        args += ["--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep"]
    return args


def _batching_flags(recipe: TrainRecipe) -> list[str]:
    c = recipe.cluster
    if c.max_tokens_per_gpu is None:
        micro = str(recipe.grpo.micro_batch_size)
        args = ["--rollout.micro_batch_size", micro, "--train.micro_batch_size", micro]
    else:
        cap = str(c.max_tokens_per_gpu)
        args = ["--rollout.micro_batch_size", "1", "--train.micro_batch_size", "1",
                "--train.dynamic_batch_enable", "--train.max_tokens_per_gpu", cap,
                "--rollout.max_tokens_per_gpu", cap]
    if c.packing:
        args.append("--ds.packing_samples")
    if c.ring_attn_size > 1:
        args += ["--ds.ring_attn_size", str(c.ring_attn_size)]
    if c.adam_offload:
        args.append("--ds.adam_offload")
    return args


def batching(recipe: TrainRecipe) -> dict[str, object]:
    """What the dry run shows of how a step's samples are split on each GPU."""
    c, m = recipe.cluster, recipe.model
    return {"packing": c.packing, "dynamic_batch": c.max_tokens_per_gpu is not None,
            "max_tokens_per_gpu": c.max_tokens_per_gpu,
            "micro_batch_size": None if c.max_tokens_per_gpu else recipe.grpo.micro_batch_size,
            "max_len": c.max_len, "ring_attn_size": c.ring_attn_size,
            "adam_offload": c.adam_offload, "gradient_checkpointing": m.gradient_checkpointing}


def _command_0_11_2(recipe: TrainRecipe, layout: Layout) -> list[str]:
    g, o = recipe.grpo, recipe.optim
    samples = g.samples_per_step
    args = [
        "--actor.model_name_or_path", layout.model_dir,
        "--train.agent_func_path", str(layout.agent),
        "--data.prompt_dataset", str(layout.tickets),
        "--data.input_key", "prompt", "--data.label_key", "label",
        "--data.max_samples", str(g.tickets_per_step),
        "--data.max_len", str(recipe.cluster.max_len),
        "--rollout.batch_size", str(g.tickets_per_step),
        "--rollout.n_samples_per_prompt", str(g.group_size),
        *_batching_flags(recipe),
        "--rollout.temperature", f"{recipe.temperature:g}",
        "--train.num_episodes", str(recipe.steps),
        "--train.batch_size", str(samples),
        "--train.max_epochs", "1",
        "--train.seed", str(recipe.seed),
        "--algo.advantage.estimator", "dr_grpo",
        "--algo.kl.init_coef", f"{g.kl_coef:g}",
        "--actor.eps_clip_low_high", f"{g.clip_low:g}", f"{g.clip_high:g}",
        "--actor.loss_agg_mode", _LOSS_AGG[g.loss_type],
        "--actor.adam.lr", f"{o.lr:g}",
        "--actor.adam.betas", f"{o.adam_beta1:g}", f"{o.adam_beta2:g}",
        "--actor.adam.weight_decay", f"{o.weight_decay:g}",
        "--actor.max_norm", f"{o.max_grad_norm:g}",
        *_scheduler(recipe),
        "--ds.param_dtype", _DTYPE[recipe.model.dtype],
        "--ckpt.path", str(layout.ckpt), "--ckpt.save_steps", str(recipe.checkpoint.every),
        "--ckpt.save_hf", "--ckpt.max_num", str(recipe.checkpoint.keep_last),
        "--ckpt.load_enable", "--ckpt.output_dir", str(layout.final),
        *_placement_flags(recipe),
    ]
    if g.kl_coef > 0:
        args += ["--algo.kl.use_loss", "--algo.kl.estimator", "k3"]
    if recipe.model.gradient_checkpointing:
        args.append("--actor.gradient_checkpointing_enable")
    if recipe.tensorboard:
        args += ["--logger.tensorboard_dir", str(layout.run_dir / "tensorboard")]
    return args


#: Supported OpenRLHF versions -> their command builder.
SUPPORTED: dict[str, Callable[[TrainRecipe, Layout], list[str]]] = {
    "0.11.2": _command_0_11_2,
}


def command(recipe: TrainRecipe, layout: Layout, version: str) -> list[str]:
    """``python -m openrlhf.cli.train_ppo_ray`` arguments for ``recipe`` on ``version``."""
    build = SUPPORTED.get(version)
    if build is None:
        raise UserError(f"OpenRLHF {version} is not supported (known: "
                        f"{', '.join(sorted(SUPPORTED))}); install openrlhf=="
                        f"{max(SUPPORTED)} or add its flag map to train/openrlhf/_flags.py")
    check_recipe(recipe)
    return build(recipe, layout)


def check_recipe(recipe: TrainRecipe) -> None:
    """One-line refusal naming the first recipe field OpenRLHF cannot honour."""
    refused = unsupported(recipe)
    if refused:
        raise UserError(f"the openrlhf backend cannot run this recipe: {refused[0]}"
                        + (f" (+{len(refused) - 1} more)" if len(refused) > 1 else ""))


def placement(recipe: TrainRecipe) -> dict[str, object]:
    """What the dry run shows: GPUs per role, engines, colocation."""
    c = recipe.cluster
    return {
        "nodes": c.nodes, "gpus_per_node": c.gpus_per_node, "gpus": c.gpus,
        "actor_gpus": c.gpus, "reference_gpus": c.gpus if recipe.grpo.kl_coef > 0 else 0,
        "critic_gpus": 0, "reward_model_gpus": 0,
        "vllm_engines": c.engines, "vllm_tensor_parallel": c.vllm_tensor_parallel,
        "colocated": c.colocate, "zero_stage": c.zero_stage,
        "samples_per_step": recipe.grpo.samples_per_step,
        "tickets_per_step": recipe.grpo.tickets_per_step,
        "n_samples_per_prompt": recipe.grpo.group_size,
    }
