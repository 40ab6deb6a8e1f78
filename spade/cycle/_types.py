"""What one cycle hands to its caller (the run loop, or a trainer's rollout hook)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from spade.corpus import CorpusSampler
from spade.designer import DesignParse
from spade.episodes import Trajectory
from spade.memory import Memory
from spade.policy import Generation, Message
from spade.policy._types import split_prefill
from spade.rewards import Arm, DesignerScore, GroupStats
from spade.store import EnvRecord, PlayRecord
from spade.validate import Verdict

#: Outcome of a design that passed validation and was played without an environment fault.
VALID = "valid"
#: The reply did not yield code and hint (``DesignSample.parse.reason`` says why).
PARSE = "parse"
#: Validated, but environment code faulted while the agent played it.
PLAY_FAULT = "play_fault"
#: Validated and played, but the plays do not earn regret (see ``spade.cycle._fair_play``):
#: the design gets no regret and is not used further.
UNFAIR_PLAY = "unfair_play"


@dataclass
class CycleState:
    """What carries over from one cycle to the next (and is persisted by the run store)."""

    memory: Memory
    sampler: CorpusSampler | None
    rng: random.Random


@dataclass(frozen=True)
class DesignSample:
    """One designer reply, what became of it, and its reward and GRPO advantage.

    ``prompt_ids`` + ``generation.token_ids`` are the exact tokens to train on (empty
    ``prompt_ids`` for a text-level policy). Designs sharing ``prompt_index`` form a group.
    ``outcome`` is :data:`VALID`, :data:`PARSE`, :data:`PLAY_FAULT`, :data:`UNFAIR_PLAY`
    (``note`` says why) or the name of the validator stage that failed (``hint_leak``
    included).
    """

    env_id: str
    prompt_index: int
    skill: str
    doc_id: str | None
    messages: tuple[Message, ...]
    prompt_ids: tuple[int, ...]
    generation: Generation
    parse: DesignParse
    verdict: Verdict | None
    outcome: str
    score: DesignerScore
    advantage: float
    note: str = ""

    @property
    def valid(self) -> bool:
        return self.outcome == VALID

    @property
    def reply(self) -> str:
        """The whole reply the parser read: a prefilled opening (the last message, when it
        is an assistant turn) followed by the generated text."""
        return split_prefill(self.messages)[1] + self.generation.text


@dataclass(frozen=True)
class AgentSample:
    """One play with its GRPO advantage; ``advantage`` is None when it carries no gradient
    (hinted plays unless ``agent.train_on_hinted``; plays ended by an environment fault)."""

    trajectory: Trajectory
    play_index: int
    advantage: float | None

    @property
    def arm(self) -> Arm:
        return self.trajectory.arm


@dataclass(frozen=True)
class CycleResult:
    """Everything a trainer needs from one cycle, plus what the run store keeps."""

    cycle: int
    designs: tuple[DesignSample, ...]
    plays: tuple[AgentSample, ...]
    designer_stats: GroupStats
    agent_stats: GroupStats
    designer_frozen: bool
    metrics: dict[str, Any]
    env_records: tuple[EnvRecord, ...] = field(repr=False, default=())
    play_records: tuple[PlayRecord, ...] = field(repr=False, default=())
