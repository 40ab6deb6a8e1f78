"""A SPADE training step against plain TRL GRPO on the same model and token shapes, per
trained token, measured in one run.

Three child processes (each with its own peak memory):

- ``spade``: ``spade train`` machinery on the cpu_demo recipe (SmolLM2-135M-Instruct) for
  two steps: step 0 regenerates (a designer ticket plus agent tickets), step 1 trains
  the agent only. The zero-advantage skip is off, so every micro-batch pays its full
  update (as once groups carry signal).
- ``trl`` (once per SPADE step): a plain ``trl.GRPOTrainer`` step on the same model with
  the same samples per step, group size and micro-batch, whose prompts are that SPADE
  step's prompts (one per group, same tokens) and whose completion budget is that step's
  longest completion; a one-turn reward.

Both trainers are timed by the same hooks, per phase (exclusive seconds and peak RSS):
``rollout`` (SPADE: ``generation`` and ``sandbox``, from the step's metrics; TRL:
generation), ``scoring`` (rewards, padding), ``old_ref_logprobs`` (a log-prob pass
outside the loss; 0 when TRL's loss pass already has the numbers), ``forward_backward``,
``optimizer``, and ``log_save`` (SPADE's commit and checkpoint; outside the ratio).
Tokens are counted per role (prompt, completion, trained). The last line is JSON with
``per_token_ratio`` and ``peak_rss_ratio`` ({"designer": step 0, "agent": step 1}):
SPADE seconds per trained token over TRL's, and the step's peak RSS over TRL's.

On a busy machine, torch's intra-op threads wait for each other at every operation (a
small matmul measured 1.8 ms with one thread and 15-45 ms with two at a load average of
12), so wall times swing with the load more than with the code; ``--threads 1`` runs
both trainers single-threaded, which keeps their ratio comparable there.

    python benchmarks/train_step.py [--quick] [--model tiny] [--threads N] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_STEPS = 2
#: Quick mode: fewer and shorter samples (the same code paths).
_QUICK = {"grpo.group_size": 2, "grpo.tickets_per_step": 2, "grpo.micro_batch_size": 2,
          "selfplay.agent.plays_per_arm": 1,
          "selfplay.designer.sampling.max_new_tokens": 64,
          "selfplay.designer.hint_max_new_tokens": 32,
          "selfplay.agent.sampling.max_new_tokens": 12, "selfplay.validation.probe_episodes": 1}


def _hwm_mb() -> float:
    text = Path("/proc/self/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+)", text)
    return int(found.group(1)) / 1024.0 if found else 0.0


def _reset_hwm() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


class PhaseClock:
    """Exclusive seconds and peak RSS per phase of each optimiser step (nested phases
    are charged to themselves only; peaks by resetting the kernel's high-water mark)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self._stack: list[list[Any]] = []
        self._step: dict[str, Any] | None = None

    def _read(self) -> float:
        peak = _hwm_mb()
        if self._step is not None:
            self._step["peak_rss_mb"] = max(self._step["peak_rss_mb"], peak)
        return peak

    def begin_step(self) -> None:
        self._step = {"phases_s": defaultdict(float), "phase_peak_rss_mb": defaultdict(float),
                      "tokens": defaultdict(lambda: defaultdict(int)), "peak_rss_mb": 0.0,
                      "began": time.perf_counter()}
        _reset_hwm()

    def end_step(self) -> None:
        if self._step is None:
            return
        self._read()
        step = self._step
        step["step_s"] = time.perf_counter() - step.pop("began")
        step["tokens"] = {k: dict(v) for k, v in step["tokens"].items()}
        step["phases_s"] = dict(step["phases_s"])
        step["phase_peak_rss_mb"] = dict(step["phase_peak_rss_mb"])
        self.steps.append(step)
        self._step = None

    def current(self) -> str | None:
        return self._stack[-1][0] if self._stack else None

    def enter(self, name: str) -> None:
        now, peak = time.perf_counter(), self._read()
        if self._stack:
            self._charge(self._stack[-1], now, peak)
        self._stack.append([name, now])
        _reset_hwm()

    def exit(self) -> None:
        now, peak = time.perf_counter(), self._read()
        self._charge(self._stack.pop(), now, peak)
        if self._stack:
            self._stack[-1][1] = now
        _reset_hwm()

    def _charge(self, frame: list[Any], now: float, peak: float) -> None:
        if self._step is None:
            return
        name, t0 = frame
        self._step["phases_s"][name] += now - t0
        self._step["phase_peak_rss_mb"][name] = max(self._step["phase_peak_rss_mb"][name], peak)
        frame[1] = now

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.enter(name)
        try:
            yield
        finally:
            self.exit()

    def count(self, role: str, prompt: int, completion: int, trained: int) -> None:
        if self._step is not None:
            t = self._step["tokens"][role]
            t["prompt"] += prompt
            t["completion"] += completion
            t["trained"] += trained


def instrument(cls: Any, clock: PhaseClock) -> Any:
    """A subclass of a GRPOTrainer class whose phases ``clock`` times."""
    from transformers import TrainerCallback

    class Steps(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            clock.begin_step()

        def on_pre_optimizer_step(self, *args: Any, **kwargs: Any) -> None:
            clock.enter("optimizer")

        def on_optimizer_step(self, *args: Any, **kwargs: Any) -> None:
            clock.exit()

    class Timed(cls):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.add_callback(Steps())

        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            with clock.phase("rollout"):
                return super()._generate(*args, **kwargs)

        def _generate_and_score_completions(self, *args: Any, **kwargs: Any) -> Any:
            with clock.phase("scoring"):
                out = super()._generate_and_score_completions(*args, **kwargs)
            mask = out["completion_mask"]
            trained = mask * out["tool_mask"] if "tool_mask" in out else mask
            roles = out.get("spade_role")
            names = {0: "designer", 1: "agent"}
            for code in ([None] if roles is None else sorted(set(roles.tolist()))):
                rows = slice(None) if code is None else roles == code
                clock.count("trl" if code is None else names[code],
                            int(out["prompt_mask"][rows].sum()), int(mask[rows].sum()),
                            int(trained[rows].sum()))
            return out

        def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
            if clock.current() == "scoring":  # a log-prob pass outside the loss
                with clock.phase("old_ref_logprobs"):
                    return super()._get_per_token_logps_and_entropies(*args, **kwargs)
            return super()._get_per_token_logps_and_entropies(*args, **kwargs)

        def training_step(self, *args: Any, **kwargs: Any) -> Any:
            with clock.phase("forward_backward"):
                return super().training_step(*args, **kwargs)

        def _prepare_inputs(self, *args: Any, **kwargs: Any) -> Any:
            with clock.phase("prepare"):
                return super()._prepare_inputs(*args, **kwargs)

        def _maybe_log_save_evaluate(self, *args: Any, **kwargs: Any) -> Any:
            with clock.phase("log_save"):
                out = super()._maybe_log_save_evaluate(*args, **kwargs)
            clock.end_step()
            return out

    return Timed


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _recipe(quick: bool, model: str) -> Any:
    from spade.train import load_recipe

    # the GRPO step is measured; a recipe's designer warm start is a stage before it
    changes: dict[str, Any] = {"steps": _STEPS, "tensorboard": False,
                               "warm_start.enabled": False}
    if quick:
        changes.update(_QUICK)
    if model != "smollm2":
        changes["model.path"] = model
    return load_recipe("cpu_demo").with_overrides(**changes)


def spade_part(quick: bool, model: str, run_dir: Path) -> dict[str, Any]:
    """Two SPADE steps; per step: phases, tokens per role, peak RSS, and the prompts of
    its groups (for the TRL step of the same shape)."""
    import spade.train.trl._trainer as trainer_module
    from spade.train._run import run_training

    from spade.textfile import read_jsonl

    clock = PhaseClock()
    timed = instrument(trainer_module.SpadeGRPOTrainer, clock)
    timed._carries_no_gradient = lambda self, inputs: False  # every group carries signal
    shapes: list[dict[str, Any]] = []
    original = timed._generate_and_score_completions

    def keep_shape(self: Any, inputs: Any) -> Any:
        out = original(self, inputs)
        g = self.num_generations
        samples = self.spade_samples
        shapes.append({"prompts": [list(s.prompt_ids) for s in samples[::g]],
                       "max_completion": max(len(s.completion_ids) for s in samples)})
        return out

    timed._generate_and_score_completions = keep_shape
    trainer_module.SpadeGRPOTrainer = timed  # type: ignore[misc]
    recipe = _recipe(quick, model)
    summary = run_training(recipe, run_dir, say=lambda _: None)
    lines = read_jsonl(summary.metrics_path)
    for step, m, shape in zip(clock.steps, lines, shapes, strict=True):
        t = m["timing_s"]
        sandbox = t["environment_s"] + t["validation_s"]
        step["phases_s"]["sandbox"] = sandbox
        step["phases_s"]["generation"] = step["phases_s"].pop("rollout", 0.0) - sandbox
        step["shape"] = shape
        step["designer_tickets"] = bool(m["designer"])
    import torch

    return {"steps": clock.steps, "peak_rss_mb": _rss_mb(),
            "torch_threads": torch.get_num_threads(),
            "samples_per_step": recipe.grpo.samples_per_step,
            "forward_tokens": recipe.grpo.forward_tokens,
            "recipe_fingerprint": recipe.fingerprint()}


def trl_part(quick: bool, model: str, shape: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """One plain GRPOTrainer step on ``shape``'s prompts (text of the same tokens)."""
    from datasets import Dataset
    from spade.train._models import load_model, resolve_model_dir
    from trl import GRPOConfig, GRPOTrainer

    recipe = _recipe(quick, model)
    g = recipe.grpo
    model_obj, tok = load_model(resolve_model_dir(recipe.model), "cpu", "float32")
    texts = [tok.decode(p, skip_special_tokens=False) for p in shape["prompts"]]

    def reward(completions: list[Any], **_: Any) -> list[float]:  # varied, so groups differ
        return [float(len(re.findall(r"\d", str(c)))) - 0.1 * (len(str(c)) % 7)
                for c in completions]

    clock = PhaseClock()
    cls = instrument(GRPOTrainer, clock)
    samples = g.samples_per_step
    args = GRPOConfig(output_dir=str(out_dir), max_steps=1,
                      per_device_train_batch_size=g.micro_batch_size,
                      gradient_accumulation_steps=samples // g.micro_batch_size,
                      num_generations=g.group_size, generation_batch_size=samples,
                      max_completion_length=shape["max_completion"],
                      temperature=recipe.temperature, learning_rate=recipe.optim.lr,
                      beta=0.0, loss_type=g.loss_type, use_cpu=True, bf16=False,
                      report_to="none", save_strategy="no", logging_steps=1,
                      disable_tqdm=True, seed=0, shuffle_dataset=False)
    trainer = cls(model=model_obj, processing_class=tok, reward_funcs=[reward], args=args,
                  train_dataset=Dataset.from_dict({"prompt": texts}))
    trainer.train()
    step = clock.steps[0]
    step["phases_s"]["generation"] = step["phases_s"].pop("rollout", 0.0)
    return {"steps": clock.steps, "peak_rss_mb": _rss_mb()}


def _child(args: list[str], shape: dict[str, Any] | None = None) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(shape or {}, fh)
    try:
        cmd = [sys.executable, __file__, *args, "--shape", fh.name]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        os.unlink(fh.name)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise SystemExit(f"benchmark part {args[1]} failed: {' | '.join(tail)}")
    line = done.stdout.strip().splitlines()[-1]
    print(f"part {args[1]}: {line}", file=sys.stderr, flush=True)  # kept if a later part fails
    return json.loads(line)


def _code_version() -> str:
    here = Path(__file__).resolve().parent
    head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", "train",
                            "benchmarks"], capture_output=True, text=True, check=False).stdout
    return (head or "unknown") + ("+local-changes" if dirty.strip() else "")


#: Phases inside the ratio (the step's rollout and update; SPADE's commit and checkpoint
#: writes are reported beside it).
_TIMED = ("generation", "sandbox", "scoring", "old_ref_logprobs", "prepare",
          "forward_backward", "optimizer")


def _summary(step: dict[str, Any]) -> dict[str, Any]:
    phases = {k: round(v, 3) for k, v in step["phases_s"].items()}
    timed = sum(v for k, v in step["phases_s"].items() if k in _TIMED)
    trained = sum(t["trained"] for t in step["tokens"].values())
    return {"step_s": round(timed, 3), "phases_s": phases, "tokens": step["tokens"],
            "trained_tokens": trained,
            "s_per_trained_token": timed / trained if trained else None,
            "peak_rss_mb": round(step["peak_rss_mb"], 1),
            "phase_peak_rss_mb": {k: round(v, 1) for k, v in step["phase_peak_rss_mb"].items()}}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    parser.add_argument("--model", default="smollm2", help="smollm2 (default) or tiny")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch intra-op threads in both parts (default: torch's own)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--part", choices=("spade", "trl"), help=argparse.SUPPRESS)
    parser.add_argument("--shape", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model not in ("smollm2", "tiny"):
        parser.error("--model: smollm2 or tiny")
    if args.threads < 0:
        parser.error("--threads: 0 (torch's default) or more")
    flags = (["--model", args.model, "--threads", str(args.threads)]
             + (["--quick"] if args.quick else []))
    if args.part:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="spade-train-step-") as tmp:
        if args.part == "spade":
            print(json.dumps(spade_part(args.quick, args.model, Path(tmp) / "run")))
            return 0
        if args.part == "trl":
            shape = json.loads(args.shape.read_text())
            print(json.dumps(trl_part(args.quick, args.model, shape, Path(tmp) / "trl")))
            return 0
    spade = _child(["--part", "spade", *flags])
    trl = [_child(["--part", "trl", *flags], s["shape"])["steps"][0] for s in spade["steps"]]
    rows = {}
    for role, s, t in zip(("designer", "agent"), spade["steps"], trl, strict=True):
        a, b = _summary(s), _summary(t)
        rows[role] = {"spade": a, "plain_trl": b,
                      "per_token_ratio": _ratio(a["s_per_trained_token"], b["s_per_trained_token"]),
                      "peak_rss_ratio": _ratio(a["peak_rss_mb"], b["peak_rss_mb"])}
    result = {
        "benchmark": "train_step", "recipe": "cpu_demo" + (" (quick)" if args.quick else ""),
        "model": "SmolLM2-135M-Instruct" if args.model == "smollm2" else args.model,
        "recipe_fingerprint": spade["recipe_fingerprint"], "code_version": _code_version(),
        "samples_per_step": spade["samples_per_step"], "forward_tokens": spade["forward_tokens"],
        "zero_advantage_skip": False, "steps": rows,
        "spade_process_peak_rss_mb": round(spade["peak_rss_mb"], 1),
        "load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
        "torch_threads": spade["torch_threads"],
        "per_token_ratio": {r: rows[r]["per_token_ratio"] for r in rows},
        "peak_rss_ratio": {r: rows[r]["peak_rss_ratio"] for r in rows},
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
