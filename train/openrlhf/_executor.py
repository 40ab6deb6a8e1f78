"""SPADE tickets inside OpenRLHF's rollout actors: the ``AgentExecutor`` contract.

OpenRLHF builds the executor with no arguments once per vLLM actor and calls
``await execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine,
images)`` once per training sequence; the N samples of one prompt are gathered
concurrently in the same actor. Here a prompt is a ticket SLOT and its label a small JSON
object ``{"run_dir": ..., "slot": k}``: the first of the N calls claims the slot's ticket
for the current step from the run's shared state (``spade.train.openrlhf._shared``), runs it,
and every sibling returns one of its ``group_size`` samples, so each GRPO group is one
ticket with one role:

- a designer ticket builds its prompt now, from the run's memory and a corpus document,
  generates ``group_size`` designs through ``llm_engine`` (token in, token out), validates
  them in the SPADE sandbox and plays each valid one with and without its hint on the same
  engine; the sample's reward is the designer's (regret or the recipe's variant);
- an agent ticket plays one pool environment ``group_size`` times, unhinted, the same
  environment for every sibling; the sequence keeps the environment's tokens and
  ``action_ranges`` cover only the agent's own;
- a fixed-environment baseline's ticket (``spade.train.baselines.BaselineRollout``) plays the
  problem the ticket draws from the source state at the step's start (shared, see
  ``spade.train.openrlhf._shared``), on its own copy of the source, so concurrent tickets in one
  actor or in several draw exactly what the TRL loop draws for that step.

The ticket runs in a worker thread (``asyncio.to_thread``): the sandbox, the validator and
the episode runner block, and the engine's event loop must keep serving other samples.
Each generation request is handed back to that loop (``spade.train.AsyncEngineGenerator``).

What OpenRLHF receives as ``reward`` is SPADE's per-role GRPO advantage (group mean 0);
with ``--algo.advantage.estimator dr_grpo`` the advantage it applies is exactly that.
``scores`` carries the raw reward (for its logs); ``extra_logs`` has the same keys for
both roles.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade.train._engine import AsyncEngineGenerator
from spade.train._rollout import Rollout, Sample, TicketResult
from spade.train._tickets import Role
from spade.train.baselines import BaselineRollout

__all__ = ["SlotLabel", "TicketExecutor", "openrlhf_sample"]


@dataclass(frozen=True)
class SlotLabel:
    """The label of one prompt row of the ticket dataset."""

    run_dir: str
    slot: int

    def to_json(self) -> str:
        return json.dumps({"run_dir": self.run_dir, "slot": self.slot}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SlotLabel:
        try:
            data = json.loads(text)
            return cls(str(data["run_dir"]), int(data["slot"]))
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"not a SPADE ticket label: {text!r:.80}") from exc


def _action_ranges(offset: int, mask: tuple[int, ...]) -> list[tuple[int, int]]:
    spans, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((offset + start, offset + i))
            start = None
    if start is not None:
        spans.append((offset + start, offset + len(mask)))
    return spans


def openrlhf_sample(sample: Sample, prompt: str, label: str, *, step: int,
                    max_length: int, want_logprobs: bool) -> dict[str, Any]:
    """One SPADE sample in the dict ``AgentExecutorBase.execute`` returns."""
    n = len(sample.prompt_ids)
    tokens = [*sample.prompt_ids, *sample.completion_ids]
    logprobs = None
    if want_logprobs and sample.logprobs is not None:
        logprobs = [0.0] * n + [float(x) for x in sample.logprobs]
    return {
        "prompt": prompt, "label": label,
        "observation_tokens": tokens,
        "action_ranges": _action_ranges(n, sample.env_mask),
        "rollout_log_probs": logprobs,
        "reward": float(sample.advantage),
        "scores": float(sample.reward),
        "truncated": len(tokens) >= max_length,
        "extra_logs": {
            "spade/designer": float(sample.role is Role.DESIGNER),
            "spade/reward": float(sample.reward),
            "spade/advantage": float(sample.advantage),
            "spade/trained_tokens": float(sample.trained_tokens),
            "spade/step": float(step),
        },
    }


@dataclass
class _Open:
    task: asyncio.Future[TicketResult]
    taken: int = 0


@dataclass
class _Runtime:
    """What one actor process builds once: recipe, shared state, sandbox, rollout."""

    shared: Any
    rollout: Rollout
    closers: list[Any] = field(default_factory=list)

    def run(self, slot: int) -> TicketResult:
        ticket = self.shared.claim(slot)
        if ticket.role is Role.DESIGNER:
            with self.shared.designing() as state:
                [result] = self.rollout.execute(state, [ticket])
        else:
            rollout = self.rollout
            if isinstance(rollout, BaselineRollout):  # draw from the step's start state
                rollout = rollout.at(self.shared.fixed_state(ticket.step))
            [result] = rollout.execute(self.shared.state(), [ticket])
        self.shared.record(ticket, result)
        return result


def _build_runtime(run_dir: Path, tokenizer: Any, engine: Any,
                   loop: asyncio.AbstractEventLoop, max_length: int) -> _Runtime:
    from spade.train._driver import rollout_for
    from spade.train.openrlhf._launch import read_run
    from spade.train.openrlhf._shared import SharedRun

    from spade.cycle._setup import sandbox_limits
    from spade.diversity import make_embedder
    from spade.sandbox import Sandbox

    recipe, identity = read_run(run_dir)
    cfg = recipe.selfplay
    sandbox = Sandbox(cfg.sandbox.isolation, sandbox_limits(cfg),
                      allow_weak=cfg.sandbox.allow_weak)
    sandbox.__enter__()
    generator = AsyncEngineGenerator(engine, tokenizer, loop, context_window=max_length,
                                     name="openrlhf-vllm")
    rollout = rollout_for(recipe, generator, sandbox, make_embedder(cfg.diversity.embedder),
                          None)
    return _Runtime(SharedRun(run_dir, recipe, identity), rollout,
                    [lambda: sandbox.__exit__(None, None, None)])


class TicketExecutor:
    """The executor logic, independent of OpenRLHF's base class (see the module
    docstring); ``spade.train.openrlhf.agent.AgentExecutor`` adds that base."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._runtime: _Runtime | None = None
        self._steps: dict[str, int] = {}

    def _runtime_for(self, label: SlotLabel, tokenizer: Any, engine: Any,
                     max_length: int) -> _Runtime:
        if self._runtime is None:
            loop = asyncio.get_running_loop()
            self._runtime = _build_runtime(Path(label.run_dir), tokenizer, engine, loop,
                                           max_length)
            atexit.register(self.close)
        return self._runtime

    def close(self) -> None:
        if self._runtime is not None:
            for closer in self._runtime.closers:
                with contextlib.suppress(Exception):
                    closer()
            self._runtime = None

    async def execute(self, prompt: str, label: str, sampling_params: Any, max_length: int,
                      hf_tokenizer: Any, llm_engine: Any, images: Any = None
                      ) -> dict[str, Any]:
        slot = SlotLabel.from_json(label)
        runtime = self._runtime_for(slot, hf_tokenizer, llm_engine, max_length)
        group = runtime.shared.recipe.grpo.group_size
        entry = self._open.get(label)
        if entry is None:
            task = asyncio.ensure_future(asyncio.to_thread(runtime.run, slot.slot))
            entry = self._open[label] = _Open(task)
        j = entry.taken
        entry.taken += 1
        if entry.taken == group:
            del self._open[label]
        result = await entry.task
        if j >= len(result.samples):
            raise RuntimeError(f"ticket {result.ticket.id} has {len(result.samples)} samples; "
                               f"--rollout.n_samples_per_prompt must equal grpo.group_size")
        want = getattr(sampling_params, "logprobs", None) is not None
        return openrlhf_sample(result.samples[j], prompt, label, step=result.ticket.step,
                               max_length=max_length, want_logprobs=want)
