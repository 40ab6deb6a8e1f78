"""The designer's warm start: supervised fine-tuning on validated design pairs, before
self-play.

A small model does not write a valid environment zero-shot; the bundled environment
families (``spade.families``) give it (designer prompt -> design + hint) pairs that all pass
the validator. The stage trains the designer role on them with the plain next-token loss on
the reply's tokens only (the prompt and any prefilled skeleton are context, exactly as the
designer sees them during self-play), then hands the same weights to the GRPO loop.

Resumable like the rest of a run: every ``checkpoint_every`` steps the weights, the optimiser
and the step count are published atomically under ``<run>/warmstart/state``; a killed run
continues from there with the same batches (batch ``s`` is a pure function of the run seed
and ``s``), and a finished stage (``done.json``) is not trained again. The data set's sha256
is part of the run's identity and of every checkpoint's manifest.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.train.recipe import TrainRecipe, WarmStartSettings

from spade.errors import UserError
from spade.seeds import derive_seed
from spade.textfile import atomic_write_text, fresh_stage, recover, swap_in, write_jsonl

__all__ = ["FOLDER", "WarmStartData", "finished_summary", "load_data", "run_warm_start"]

#: The stage's folder inside a run directory.
FOLDER = "warmstart"
_STATE = "state"
_DONE = "done.json"


@dataclass(frozen=True)
class WarmStartData:
    """The pairs of one data set, with the digest that names it."""

    pairs: list[dict[str, Any]]
    sha256: str
    manifest: dict[str, Any]


def load_data(settings: WarmStartSettings) -> WarmStartData:
    """The configured set (bundled when ``data`` is empty), checked against its manifest."""
    from spade.families.warmstart import read_manifest, read_pairs

    folder = Path(settings.data).expanduser() if settings.data else None
    pairs, digest = read_pairs(folder)
    if not pairs:
        raise UserError("the warm-start data set is empty")
    return WarmStartData(pairs, digest, read_manifest(folder))


def check_prompt_settings(recipe: TrainRecipe, data: WarmStartData) -> list[str]:
    """Designer settings where the data's prompts differ from the recipe's (shown, not fatal:
    the pairs still teach the format, but the prompts are not those of the run)."""
    from spade.families._pairs import prompt_settings

    ours = prompt_settings(recipe.selfplay.designer)
    theirs = data.manifest.get("prompt", {})
    return [f"{k}: data {theirs.get(k)!r}, recipe {v!r}" for k, v in ours.items()
            if theirs.get(k) != v]


def _encode(pair: dict[str, Any], template: Any, tokenizer: Any) -> tuple[list[int], list[int]]:
    """Prompt ids (the chat up to the open assistant turn, plus the prefill) and the reply's
    ids ending with the end-of-turn token."""
    from spade.designer import with_prefill

    prompt = template.render(with_prefill(pair["messages"], pair["prefill"]))
    reply = [int(i) for i in tokenizer(pair["completion"], add_special_tokens=False)["input_ids"]]
    return list(prompt), [*reply, template.eot_id]


def _order(seed: int, n: int, step: int, batch: int) -> list[int]:
    """Pair indices of step ``step``: consecutive slices of seeded per-epoch permutations."""
    out = []
    for k in range(step * batch, (step + 1) * batch):
        epoch, pos = divmod(k, n)
        perm = list(range(n))
        random.Random(derive_seed(seed, "warmstart-order", epoch)).shuffle(perm)
        out.append(perm[pos])
    return out


def _save_state(folder: Path, model: Any, optimizer: Any, step: int, log: list[dict[str, Any]]
                ) -> None:
    """Publish the stage's state after ``step`` updates atomically (a folder swap)."""
    import torch

    target = folder / _STATE
    stage = fresh_stage(target)
    try:
        torch.save(model.state_dict(), stage / "model.pt")
        torch.save(optimizer.state_dict(), stage / "optimizer.pt")
        (stage / "progress.json").write_text(json.dumps({"step": step, "log": log}), "utf-8")
        swap_in(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _load_state(folder: Path, model: Any, optimizer: Any | None) -> tuple[int, list[Any]]:
    import torch

    state = folder / _STATE
    recover(state)  # killed between the swap's two renames
    if not (state / "progress.json").is_file():
        return 0, []
    model.load_state_dict(torch.load(state / "model.pt", weights_only=True))
    if optimizer is not None:
        optimizer.load_state_dict(torch.load(state / "optimizer.pt", weights_only=True))
    progress = json.loads((state / "progress.json").read_text("utf-8"))
    return int(progress["step"]), list(progress["log"])


def _step(model: Any, batch: Sequence[tuple[list[int], list[int]]], device: str) -> float:
    """Accumulate the gradient of the mean reply-token loss over ``batch``; returns it."""
    import torch

    total = sum(len(reply) for _, reply in batch)
    loss_sum = 0.0
    for prompt, reply in batch:
        ids = torch.tensor([prompt + reply], device=device)
        loss = _reply_loss(model, ids, len(reply))
        (loss / total).backward()
        loss_sum += float(loss.detach())
    return loss_sum / total


def _reply_loss(model: Any, ids: Any, keep: int) -> Any:
    """Summed next-token loss of the last ``keep`` tokens. The vocabulary head runs on those
    positions only (the prompt's logits are never needed): the same loss and gradient as
    the full logits, at a fraction of the head's time and memory on long prompts."""
    import torch
    from spade.train.trl._update import completion_logps

    mask = torch.ones_like(ids)
    found = completion_logps(model, ids, mask, keep, 1.0, False)
    if found is not None:
        return -found[0].sum()
    logits = model(input_ids=ids).logits[:, -keep - 1:-1].float()
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), ids[:, -keep:].reshape(-1), reduction="sum")


def finished_summary(run_dir: Path) -> dict[str, Any] | None:
    """The summary of a finished warm start in ``run_dir`` (None: none ran or finished)."""
    done = run_dir / FOLDER / _DONE
    return dict(json.loads(done.read_text("utf-8"))) if done.is_file() else None


def run_warm_start(recipe: TrainRecipe, run_dir: Path, model: Any, tokenizer: Any,
                   device: str, say: Callable[[str], None] = print,
                   data: WarmStartData | None = None) -> dict[str, Any]:
    """Train the designer role on the warm-start pairs (resuming if a state exists); the
    model ends up with the warm-started weights. Returns the stage's summary."""
    import torch

    from spade.policy._template import ChatTemplate

    ws = recipe.warm_start
    data = data or load_data(ws)
    folder = run_dir / FOLDER
    done = folder / _DONE
    if done.is_file():
        summary = json.loads(done.read_text("utf-8"))
        if summary.get("data_sha256") != data.sha256:
            raise UserError(f"{folder}: warmed up on data {summary.get('data_sha256', '?')[:12]}"
                            f", the recipe's data is {data.sha256[:12]}; start a new run")
        _load_state(folder, model, None)
        say(f"warm start already done ({summary['steps']} steps, final loss "
            f"{summary['final_loss']:.3f}); loading its weights")
        return dict(summary)
    for line in check_prompt_settings(recipe, data):
        say(f"warm start: prompts differ from the recipe's: {line}")
    template = ChatTemplate(tokenizer)
    encoded = [_encode(p, template, tokenizer) for p in data.pairs]
    usable = [e for e in encoded if len(e[0]) + len(e[1]) <= ws.max_tokens]
    if not usable:
        raise UserError(f"warm_start.max_tokens {ws.max_tokens}: every pair is longer")
    optimizer = torch.optim.AdamW(model.parameters(), lr=ws.lr, weight_decay=0.0)
    was_training = model.training
    model.eval()  # no dropout: a resumed stage computes exactly what an unbroken one would
    start, log = _load_state(folder, model, optimizer)
    if start:
        say(f"warm start: resuming after step {start}/{ws.steps}")
    else:
        say(f"warm start: {ws.steps} steps of {ws.batch_size} pairs (designer fine-tuning "
            f"on {len(usable)} validated designs)")
    began = time.perf_counter()
    for step in range(start, ws.steps):
        t = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        batch = [usable[i] for i in _order(recipe.seed, len(usable), step, ws.batch_size)]
        loss = _step(model, batch, device)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), ws.max_grad_norm))
        optimizer.step()
        log.append({"step": step, "loss": round(loss, 6), "grad_norm": round(grad_norm, 6),
                    "reply_tokens": sum(len(r) for _, r in batch),
                    "seconds": round(time.perf_counter() - t, 3)})
        say(f"warm start step {step + 1}/{ws.steps}: loss {loss:.3f} "
            f"({time.perf_counter() - t:.1f} s)")
        if (step + 1) % ws.checkpoint_every == 0 or step + 1 == ws.steps:
            _save_state(folder, model, optimizer, step + 1, log)
    optimizer.zero_grad(set_to_none=True)
    summary = {"data_sha256": data.sha256, "pairs": len(data.pairs), "pairs_used": len(usable),
               "families_version": data.manifest.get("families_version"), "steps": ws.steps,
               "batch_size": ws.batch_size, "lr": ws.lr,
               "first_loss": log[0]["loss"] if log else None,
               "final_loss": log[-1]["loss"] if log else None,
               "seconds_this_process": round(time.perf_counter() - began, 1)}
    write_jsonl(folder / "metrics.jsonl", log)
    atomic_write_text(done, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    (folder / _STATE / "optimizer.pt").unlink(missing_ok=True)  # only the weights live on
    model.train(was_training)
    return summary
