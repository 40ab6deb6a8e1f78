"""vLLM stood in for the OpenRLHF tests (vLLM needs a GPU): the project's engine over a local
HF model (``spade.train.openrlhf._standin``), a fake ``vllm`` module, and OpenRLHF's steps
driven on one event loop."""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path
from typing import Any

from spade.train.openrlhf import SlotLabel
from spade.train.openrlhf._standin import PolicyEngine, SamplingParams


def install(monkeypatch: Any) -> None:
    """Make ``from vllm import SamplingParams`` resolve to :class:`SamplingParams`."""
    module = types.ModuleType("vllm")
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)


class FakeEngine(PolicyEngine):
    """The stand-in engine over a local HF model on the CPU."""

    def __init__(self, model_dir: Any) -> None:
        from spade.policy import HFPolicy

        super().__init__(HFPolicy.from_path(model_dir, device="cpu"))


def run_steps(executor: Any, engine: FakeEngine, run_dir: Path, recipe: Any,
               steps: int) -> list[list[list[dict[str, Any]]]]:
    """``steps`` OpenRLHF steps on one event loop (an actor's loop lives as long as the
    actor): every ticket slot per step, ``group_size`` concurrent calls each. ``executor``
    may be a list: slot ``k`` then goes to executor ``k mod n``, as OpenRLHF spreads
    prompts over several vLLM actors (each with its own runtime)."""
    g = recipe.grpo
    executors = executor if isinstance(executor, list) else [executor]

    async def one_step() -> list[list[dict[str, Any]]]:
        async def slot(k: int) -> list[dict[str, Any]]:
            label = SlotLabel(str(run_dir), k).to_json()
            calls = [executors[k % len(executors)].execute(f"SPADE ticket slot {k}", label,
                                      SamplingParams(logprobs=1), 4096, engine.tokenizer,
                                      engine) for _ in range(g.group_size)]
            return list(await asyncio.gather(*calls))

        return list(await asyncio.gather(*(slot(k) for k in range(g.tickets_per_step))))

    async def go() -> list[list[list[dict[str, Any]]]]:
        return [await one_step() for _ in range(steps)]

    return asyncio.run(go())
