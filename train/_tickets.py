"""Role-tagged tickets: the unit of work a trainer hands its rollout, one GRPO group each.

A step of ``tickets_per_step`` tickets is fixed by the recipe and the step number alone, so
every backend (and a resumed run) plans the same work:

- a DESIGNER ticket asks for ``group_size`` designs from one designer prompt. Its ordinal
  (the count of designer tickets before it in the run) picks the skill and names its
  environments; it is executed as one self-play cycle of one prompt.
- an AGENT ticket asks for ``group_size`` plays of one pool environment (``slot`` modulo
  the pool size), each on its own environment seed and sampling seed.

Tickets are small frozen records that round-trip through JSON, so a backend that can pass
only a string per prompt (OpenRLHF's ``label``) carries them unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from spade.seeds import derive_seed

__all__ = ["Role", "Ticket", "plan_step", "plan_steps"]


class Role(StrEnum):
    DESIGNER = "designer"
    AGENT = "agent"


@dataclass(frozen=True)
class Ticket:
    """One GRPO group's worth of work (see the module docstring)."""

    role: Role
    step: int
    index: int  # position within the step
    run_seed: int
    group_size: int
    ordinal: int = -1  # designer tickets: global designer-ticket number
    slot: int = -1  # agent tickets: pool slot (modulo the pool size)

    @property
    def id(self) -> str:
        return f"s{self.step:05d}-t{self.index:03d}-{self.role}"

    def sample_seed(self, j: int) -> int:
        """Sampling seed of sample ``j`` of this ticket (distinct for every sibling)."""
        return derive_seed(self.run_seed, f"train-{self.role}", self.step, self.index, j)

    def env_seed(self, j: int) -> int:
        """Environment reset seed of play ``j`` of an agent ticket (31 bits: numpy-safe)."""
        return derive_seed(self.run_seed, "train-play", self.step, self.index, j, bits=31)

    def to_json(self) -> str:
        data = asdict(self)
        data["role"] = str(self.role)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> Ticket:
        data = json.loads(text) if isinstance(text, str) else dict(text)
        data["role"] = Role(data["role"])
        return cls(**data)


def plan_step(recipe: Any, step: int) -> list[Ticket]:
    """The tickets of ``step``: designer tickets first (regeneration steps), then agents."""
    total = recipe.grpo.tickets_per_step
    n_design = recipe.designer_tickets(step)
    prompts = recipe.selfplay.designer.prompts_per_cycle
    regenerations_before = -(-step // recipe.regenerate_every)  # ceil
    out = []
    for i in range(total):
        if i < n_design:
            out.append(Ticket(Role.DESIGNER, step, i, recipe.seed, recipe.grpo.group_size,
                              ordinal=regenerations_before * prompts + i))
        else:
            agent_index = i - n_design
            out.append(Ticket(Role.AGENT, step, i, recipe.seed, recipe.grpo.group_size,
                              slot=step * total + agent_index))
    return out


def plan_steps(recipe: Any, steps: int) -> list[Ticket]:
    """Every ticket of steps ``0 .. steps-1``, in order (a trainer's prompt dataset)."""
    return [t for s in range(steps) for t in plan_step(recipe, s)]
