"""OpenRLHF's own code on one device, for ``benchmarks/gpu_check.py``.

Only Ray, vLLM, DeepSpeed (and flash-attn where it is absent) are stood in, as the
contract tests do; flash-attn's fused cross-entropy is always left out so log-probs take
OpenRLHF's own fallback (gather + chunked logsumexp) on any machine.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade.train.openrlhf._standin import PolicyEngine

#: Shapes: vocabulary, hidden, layers, MLP width, heads, KV heads, head dim, tied embeddings.
Shape = tuple[int, int, int, int, int, int, int, bool]


class _NoFusedCrossEntropy(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name == "flash_attn.ops.triton.cross_entropy":
            raise ImportError(name)
        return None


def stand_in() -> None:
    """Stubs for the GPU stacks (the flag probe's), a real ``SamplingParams``, no fused
    cross-entropy."""
    from spade.train.openrlhf._probe import install_stubs
    from spade.train.openrlhf._standin import SamplingParams

    install_stubs()
    if not any(isinstance(f, _NoFusedCrossEntropy) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoFusedCrossEntropy())
    import vllm

    vllm.SamplingParams = SamplingParams


def _one_step(executor: Any, engine: PolicyEngine, run_dir: Path, recipe: Any,
              max_len: int) -> list[dict[str, Any]]:
    from spade.train.openrlhf import SlotLabel
    from spade.train.openrlhf._standin import SamplingParams

    async def slot(k: int) -> list[dict[str, Any]]:
        label = SlotLabel(str(run_dir), k).to_json()
        calls = [executor.execute(f"SPADE ticket slot {k}", label, SamplingParams(logprobs=1),
                                  max_len, engine.tokenizer, engine)
                 for _ in range(recipe.grpo.group_size)]
        return list(await asyncio.gather(*calls))

    async def go() -> list[list[dict[str, Any]]]:
        return list(await asyncio.gather(*(slot(k) for k in range(recipe.grpo.tickets_per_step))))

    return [r for group in asyncio.run(go()) for r in group]


def run_openrlhf_check(device: str) -> dict[str, Any]:
    """One SPADE step through OpenRLHF's loader, executor contract, experience code,
    advantages, Actor and PolicyLoss, with one optimiser step on ``device``."""
    stand_in()
    import torch
    from openrlhf.models import Actor, PolicyLoss
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
    from spade.train._models import build_tiny_model
    from spade.train.openrlhf._flags import Layout, command
    from spade.train.openrlhf._launch import prepare_run
    from spade.train.openrlhf._probe import capture_args
    from spade.train.openrlhf._standin import PolicyEngine
    from spade.train.recipe import load_recipe
    from transformers import AutoTokenizer

    from spade.policy import HFPolicy

    tmp = Path(tempfile.mkdtemp(prefix="spade-gpu-check-openrlhf-"))
    model_dir = build_tiny_model(tmp / "model")
    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 1, "backend": "openrlhf", "model.path": str(model_dir),
        "model.device": "cuda", "model.dtype": "bfloat16", "cluster.gpus_per_node": 1})
    layout = Layout(tmp / "run", str(model_dir))
    layout.run_dir.mkdir()
    prepare_run(layout, recipe, recipe.identity())
    args, _ = capture_args(command(recipe, layout, "0.11.2"))
    # the Actor loads the weights itself, as in OpenRLHF's actor workers
    actor = Actor(str(model_dir), attn_implementation="sdpa",
                  param_dtype="bf16", packing_samples=False)
    model = actor.model.to(device)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    executor = _load_agent_executor(str(layout.agent))  # OpenRLHF's own loader
    engine = PolicyEngine(HFPolicy(model, tokenizer, name="live"))
    began = time.monotonic()
    try:
        responses = _one_step(executor, engine, layout.run_dir, recipe, args.data.max_len)
    finally:
        executor.close()
    rollout_s = time.monotonic() - began
    gen = object.__new__(SamplesGenerator)
    gen.args = args
    exps = [gen._process_response_into_experience(r, max_len=args.data.max_len)
            for r in responses]
    for i, e in enumerate(exps):
        e.index = [i]
        e.kl = torch.zeros_like(e.action_mask, dtype=torch.float32)
    maker = object.__new__(RemoteExperienceMaker)
    maker.strategy = type("S", (), {"args": args})()
    maker.args = args
    maker.advantage_estimator = args.algo.advantage.estimator
    maker.kl_ctl = type("K", (), {"value": args.algo.kl.init_coef})()
    exps = maker.compute_advantages_and_returns(exps)
    low, high = args.actor.eps_clip_low_high
    loss_fn = PolicyLoss(clip_eps_low=low, clip_eps_high=high)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = [p.detach().clone() for p in model.parameters()]
    total = 0.0
    for e in exps:
        seq, mask = e.sequences.to(device), e.attention_mask.to(device)
        action = e.action_mask.to(device)
        with torch.no_grad():
            old = actor(seq, action, mask)
        new = actor(seq, action, mask)
        out = loss_fn(new, old, e.advantages.to(device), action_mask=action)
        loss = out[0] if isinstance(out, tuple) else out
        (loss / len(exps)).backward()
        total += float(loss.detach())
    grad = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    optim.step()
    changed = any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters(),
                                                                strict=True))
    roles = sorted({"designer" if r["extra_logs"]["spade/designer"] else "agent"
                    for r in responses})
    moving = sum(int(bool(e.advantages.abs().max() > 0)) for e in exps)
    # a random tiny model often scores every sample alike (all advantages 0): then the
    # step is a no-op by design, and only the plumbing is checked
    return {"ok": len(exps) == recipe.grpo.samples_per_step and grad == grad
            and (changed or moving == 0),
            "samples_with_nonzero_advantage": moving,
            "device": device, "samples": len(exps), "roles": roles,
            "engine_requests": engine.requests, "rollout_s": round(rollout_s, 1),
            "trained_tokens": int(sum(int(e.action_mask.sum()) for e in exps)),
            "policy_loss": round(total / len(exps), 6), "grad_norm": round(grad, 6),
            "weights_changed": changed, "estimator": args.algo.advantage.estimator}


def _model(shape: Shape, device: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    v, h, n, i, heads, kv, hd, tied = shape
    cfg = Qwen3Config(vocab_size=v, hidden_size=h, num_hidden_layers=n, intermediate_size=i,
                      num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                      tie_word_embeddings=tied, max_position_embeddings=40960)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype,
                                                 attn_implementation="sdpa")
    for p in model.parameters():  # parameter gradients are ZeRO-sharded: measured apart
        p.requires_grad_(False)
    model.enable_input_require_grads()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def _measure(actor: Any, batch: int, tokens: int, vocab: int, device: str) -> dict[str, Any]:
    import torch

    gib = 1024.0 ** 3
    seq = torch.randint(0, vocab, (batch, tokens), device=device)
    mask = torch.ones_like(seq)
    action = torch.ones((batch, tokens // 2), dtype=torch.bool, device=device)
    out: dict[str, Any] = {}
    cuda = device == "cuda"
    base = torch.cuda.memory_allocated() if cuda else 0
    for phase in ("logprob", "train"):
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        try:
            if phase == "logprob":
                with torch.no_grad():
                    actor(seq, action, mask)
            else:
                lp = actor(seq, action, mask)
                (-(lp * action).sum() / action.sum()).backward()
        except torch.OutOfMemoryError:
            out[phase] = "oom"
            break
        finally:
            if cuda:
                torch.cuda.synchronize()
        out[phase] = round((torch.cuda.max_memory_allocated() - base) / gib, 2) if cuda \
            else "ran"
    if cuda:
        torch.cuda.empty_cache()
    return out


def run_memory_grid(device: str, shapes: list[str], micro_batches: list[int],
                    lengths: list[int], cap_gib: float, deadline: float) -> dict[str, Any]:
    """Peak memory above the weights of OpenRLHF's log-prob pass and training step for
    each setting, next to the estimate; the largest setting whose 8-GPU ZeRO-3 total
    (measured peak + the states' share) fits ``cap_gib``."""
    stand_in()
    import torch
    from gpu_check import SHAPES
    from openrlhf.models import Actor
    from spade.train.openrlhf._memory import GIB, LOGPROB_BYTES_PER_LOGIT, TRAIN_BYTES_PER_LOGIT

    if device == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_gib * GIB / total))
    report: dict[str, Any] = {"cap_gib": cap_gib, "shapes": {}}
    for name in shapes:
        shape = SHAPES[name]
        model = _model(shape, device)
        params = sum(p.numel() for p in model.parameters())
        states_share = 16 * params / 8 / GIB  # bf16 weights+grads, fp32 Adam over 8 GPUs
        actor = Actor(model)  # a built model: the Actor leaves its options unset
        actor.packing_samples = False  # padded micro-batches (packing needs flash-attn)
        rows, failed, best = [], False, None
        for tokens in lengths:
            for batch in micro_batches:
                row: dict[str, Any] = {"micro_batch": batch, "tokens": tokens}
                if failed or time.monotonic() > deadline:
                    row["skipped"] = "a smaller setting did not fit" if failed else "time"
                    rows.append(row)
                    continue
                row.update(_measure(actor, batch, tokens, shape[0], device))
                logits = batch * tokens * shape[0]
                row["estimate_logits_gib"] = {
                    "logprob": round(logits * LOGPROB_BYTES_PER_LOGIT / GIB, 4),
                    "train": round(logits * TRAIN_BYTES_PER_LOGIT / GIB, 4)}
                if isinstance(row.get("train"), float):
                    row["per_gpu_8x_zero3_gib"] = round(row["train"] + states_share, 2)
                    if row["per_gpu_8x_zero3_gib"] <= cap_gib:
                        best = {"micro_batch": batch, "tokens": tokens}
                failed = failed or "oom" in (row.get("logprob"), row.get("train"))
                rows.append(row)
        report["shapes"][name] = {"params": params, "states_share_gib": round(states_share, 2),
                                  "rows": rows, "largest_that_fits": best}
        del actor, model
        if device == "cuda":
            torch.cuda.empty_cache()
    report["ok"] = all(s["rows"] for s in report["shapes"].values())
    return report
