"""Records of agent episodes: one ``Trajectory`` per play, ready for a trainer.

The token view is what training needs (ids, loss mask, sampled log-probs, all aligned);
the message view is what a person reads in a log. Both describe the same episode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from spade.errors import UserError
from spade.rewards import Arm

#: The runner's global turn cap (up to 25 turns).
DEFAULT_MAX_TURNS = 25


class StopReason(StrEnum):
    """Why an episode ended (one-hot metrics in the cycle)."""

    WON = "won"  # the environment ended it and the return reached the success threshold
    TERMINATED = "terminated"  # the environment ended it without a win
    TRUNCATED = "truncated"  # the environment truncated it without a win
    MAX_TURNS = "max_turns"  # the runner's turn cap (min of the env's and the runner's)
    CONTEXT_EXHAUSTED = "context_exhausted"  # the next prompt + max_new_tokens would not fit
    ENV_ERROR = "env_error"  # environment code faulted (the designer's fault, not the agent's)
    TIMEOUT = "timeout"  # environment code ran past its time limit


#: Stop reasons caused by the environment, not the agent: trainers mask the agent's gradient.
ENV_FAULT_REASONS = frozenset({StopReason.ENV_ERROR, StopReason.TIMEOUT})


@dataclass(frozen=True)
class Turn:
    """One agent turn: what it said, what it did, what came back."""

    index: int
    reply: str  # the sampled text
    start: int  # the sampled ids are ``token_ids[start:end]`` of the trajectory
    end: int
    finish_reason: str  # "stop" | "length"
    action: str | None = None  # game action, or the submitted answer (tool use)
    tool_calls: tuple[dict[str, Any], ...] = ()  # {"name", "arguments"} of the parsed calls
    feedback: tuple[str, ...] = ()  # observation / tool results / error / nudge texts
    reward: float = 0.0


@dataclass(frozen=True)
class Trajectory:
    """One episode of one environment, seed and arm.

    ``token_ids``, ``loss_mask`` and ``logprobs`` have the same length: the whole episode
    (initial prompt, every sampled reply, every observation in between). The mask is 1
    exactly on tokens the agent sampled; ``logprobs`` holds their log-probabilities (0.0 on
    masked positions) or is ``None`` when the backend gave none.
    """

    env_id: str
    seed: int
    arm: Arm
    kind: str  # "game" | "tool"
    token_ids: tuple[int, ...]
    loss_mask: tuple[int, ...]
    logprobs: tuple[float, ...] | None
    prompt_len: int  # length of the initial prompt (system + first observation)
    turns: tuple[Turn, ...]
    rewards: tuple[float, ...]  # one per turn
    total_return: float  # sum of rewards clipped to [-1, 1]
    won: bool
    stop_reason: StopReason
    max_turns: int
    hint: str | None = None
    env_fault: str | None = None  # "kind: message" when environment code faulted
    messages: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    #: What ``reset`` returned (before any hint was added): the instance the agent saw.
    reset_observation: str = field(default="", repr=False)

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def agent_tokens(self) -> int:
        return sum(self.loss_mask)

    @property
    def agent_trainable(self) -> bool:
        """False when the environment, not the agent, ended the episode."""
        return self.env_fault is None

    def to_json(self, *, tokens: bool = True) -> dict[str, Any]:
        """Plain JSON data for logs and the run store (``tokens=False`` drops the id lists)."""
        data = asdict(self)
        data["arm"], data["stop_reason"] = str(self.arm), str(self.stop_reason)
        data["num_turns"] = self.num_turns
        data["turns"] = [
            {**asdict(t), "tool_calls": [dict(c) for c in t.tool_calls],
             "feedback": list(t.feedback)}
            for t in self.turns
        ]
        for key in ("token_ids", "loss_mask", "logprobs", "rewards", "messages"):
            if data[key] is not None:
                data[key] = list(data[key])
        if not tokens:
            for key in ("token_ids", "loss_mask", "logprobs"):
                data.pop(key)
        return data


@dataclass(frozen=True)
class EpisodeConfig:
    """Runner limits.

    ``max_active`` bounds the episodes (and env instances) alive at once. Up to
    ``env_threads`` step/tool calls of different episodes run concurrently (each is a round
    trip to its own worker process); results do not depend on it. The default is 1 because
    the sandbox is specified for one caller at a time; instances are always acquired one at
    a time on the caller's thread.
    """

    max_turns: int = DEFAULT_MAX_TURNS
    max_active: int | None = None
    env_threads: int = 1

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise UserError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.max_active is not None and self.max_active < 1:
            raise UserError(f"max_active must be >= 1, got {self.max_active}")
        if self.env_threads < 1:
            raise UserError(f"env_threads must be >= 1, got {self.env_threads}")


@dataclass(frozen=True)
class EpisodeJob:
    """One play to run: which environment, which seed, with which hint (None: unhinted).

    ``sample`` tells apart plays of the SAME instance (a GRPO group of one problem: same
    seed, different samples): each non-zero ``sample`` gets its own sampling stream."""

    env_id: str
    seed: int
    hint: str | None = None
    sample: int = 0

    @property
    def arm(self) -> Arm:
        return Arm.UNHINTED if self.hint is None else Arm.HINTED
