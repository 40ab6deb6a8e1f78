"""The validator's typed verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Stage(StrEnum):
    """Validation stages, in the order they run. A verdict names the first that failed."""

    SOURCE = "source"  # syntax, exactly one *Env class, no global RNG seeding
    LOAD = "load"  # import and construct inside the sandbox
    TYPES = "types"  # reset/step return types, real bool flags
    REWARDS = "rewards"  # finite rewards, return within range
    DETERMINISM = "determinism"  # same seed + actions => same trajectory, across processes
    VARIETY = "variety"  # different seeds => different instances
    TERMINATION = "termination"  # episodes end within max_turns
    ANSWER_LEAK = "answer_leak"  # observations do not show the answer
    TOO_EASY = "too_easy"  # random / trivial policies do not win often
    SOLUTION = "solution"  # solution(), when present, wins
    HINT_LEAK = "hint_leak"  # the hint does not give away the answer or solution
    TOOL_SCHEMA = "tool_schema"  # tool schemas are valid JSON Schema (tool envs)
    SAFETY = "safety"  # a forbidden operation was attempted (any stage can raise it)
    DONE = "done"  # every stage passed


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one stage."""

    stage: Stage
    passed: bool
    reason: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """Whether an environment is valid, and if not, where and why it failed."""

    valid: bool
    stage: Stage
    reason: str
    checks: tuple[CheckResult, ...] = ()
    seconds: float = 0.0
    class_name: str | None = None
    kind: str | None = None  # "game" | "tool"
    #: Base of every seed the validation used: ``ValidationConfig(seed=...)`` replays it.
    seed: int | None = None

    @property
    def timed_out(self) -> bool:
        """Whether a time limit decided it (a call's, or the whole validation's budget): the
        one kind of verdict that can depend on how busy the machine was."""
        last = self.checks[-1] if self.checks else None
        return (not self.valid and last is not None
                and last.details.get("fault") in ("timeout", "budget"))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stage"] = str(self.stage)
        data["checks"] = [{**asdict(c), "stage": str(c.stage)} for c in self.checks]
        return data
