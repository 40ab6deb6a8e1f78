"""Calls into a sandboxed environment, with the contract's type rules and named faults.

Every value the environment returns passes through here, so a type or range problem is
caught whichever probe happens to trigger it, and every fault (exception, timeout, crash,
oversize reply) becomes a :class:`CheckFailed` that says which call failed and how.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spade.sandbox._types import EnvFault, FaultKind, Opaque
from spade.validate._capabilities import RANK, WORDS
from spade.validate._failure import CheckFailed
from spade.validate._verdict import Stage

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle

#: A reward integer beyond this cannot be a reward (and ``float()`` may not convert it).
_MAX_REWARD = 10**6
_FAULT_WORDS = {
    FaultKind.EXCEPTION: "raised",
    FaultKind.TIMEOUT: "timed out",
    FaultKind.CRASH: "crashed the environment process",
    FaultKind.PROTOCOL: "broke the reply protocol",
    FaultKind.VIOLATION: "attempted a forbidden operation",
}


@dataclass(frozen=True)
class StepResult:
    """One checked ``step`` return (info is dropped: it is never compared)."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated


class Calls:
    """A handle plus the validator's bookkeeping: current stage, deadline, call count.

    ``firsts`` (shared by every worker of one validation) remembers each seed's first
    observation: any later ``reset`` of that seed, in any worker, must show the same one.
    A validation resets dozens of seeds more than once (probes, replays, constant answers,
    the hint audit), so an instance that is random only on some seeds (an unseeded
    fallback past a table, every 97th seed) is compared on all of them at no extra cost.
    """

    def __init__(
        self, handle: EnvHandle, *, label: str, deadline: float, max_obs_chars: int,
        firsts: dict[int, tuple[str, str]] | None = None, about: str = "",
    ) -> None:  # fmt: skip
        self.handle = handle
        self.label = label
        #: What sets this worker apart, for reasons that compare workers.
        self.about = f"{label}{', ' if about else ''}{about}"
        self.deadline = deadline
        self.max_obs_chars = max_obs_chars
        self.stage = Stage.LOAD
        self.count = 0
        self.firsts: dict[int, tuple[str, str]] = {} if firsts is None else firsts

    def _call(self, what: str, stage: Stage | None, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() > self.deadline:
            raise CheckFailed(self.stage, "time budget exhausted", budget=True)
        self.count += 1
        try:
            return fn(*args, **kwargs)
        except EnvFault as fault:
            raise fault_failure(fault, what, stage or self.stage) from None

    def reset(self, seed: int) -> str:
        what = f"reset(seed={seed})"
        value = self._call(what, None, self.handle.reset, seed=seed)
        if not isinstance(value, tuple) or len(value) != 2:
            raise _types(f"{what} must return a tuple (observation, info), got {_kind(value)}")
        observation, info = value
        self._check_observation(observation, what)
        if not isinstance(info, dict):
            raise _types(f"{what} returned info of type {_kind(info)}; it must be a dict")
        first, where = self.firsts.setdefault(seed, (observation, self.about))
        if first != observation:
            raise CheckFailed(
                Stage.DETERMINISM,
                f"same seed and actions gave different results: {what} showed "
                f"{_show(first, 60)} in the {where}, then {_show(observation, 60)} in the "
                f"{self.about} (an instance must depend on its seed alone)",
            )
        return observation

    def step(self, action: str, where: str) -> StepResult:
        what = f"step({_show(action)}) {where}"
        value = self._call(what, None, self.handle.step, action)
        if not isinstance(value, tuple) or len(value) != 5:
            raise _types(
                f"{what} must return a 5-tuple (observation, reward, terminated, truncated, "
                f"info), got {_kind(value)}"
            )
        observation, reward, terminated, truncated, info = value
        self._check_observation(observation, what)
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            hint = " (are reward and terminated swapped?)" if isinstance(reward, bool) else ""
            raise _types(
                f"{what} returned reward of type {_kind(reward)}; it must be a real number{hint}"
            )
        if isinstance(reward, int) and abs(reward) > _MAX_REWARD:
            raise CheckFailed(Stage.REWARDS, f"{what} returned a reward of "
                              f"{reward.bit_length()} bits, beyond any return range")
        if not math.isfinite(reward):
            raise CheckFailed(Stage.REWARDS, f"{what} returned a non-finite reward ({reward})")
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if not isinstance(flag, bool):
                raise _types(
                    f"{what} returned {name} = {_show(flag)} of type {_kind(flag)}; "
                    "flags must be bool"
                )
        if not isinstance(info, dict):
            raise _types(f"{what} returned info of type {_kind(info)}; it must be a dict")
        return StepResult(observation, float(reward), terminated, truncated)

    def call_tool(self, name: str, arguments: Any, where: str) -> str:
        what = f"call_tool({name!r}, {_show(arguments)}) {where}"
        # A tool that raises (instead of returning an error text) breaks the tool contract.
        value = self._call(what, Stage.TOOL_SCHEMA, self.handle.call_tool, name, arguments)
        if not isinstance(value, str):
            raise CheckFailed(
                Stage.TOOL_SCHEMA, f"{what} returned {_kind(value)}; tool calls must return text"
            )
        if len(value) > self.max_obs_chars:
            raise _types(f"{what} returned {len(value)} characters (limit {self.max_obs_chars})")
        _check_utf8(value, what)
        return value

    def solution(self, seed: int) -> Any:
        return self._call(
            f"solution() after reset(seed={seed})", Stage.SOLUTION, self.handle.solution
        )

    def _check_observation(self, observation: Any, what: str) -> None:
        if not isinstance(observation, str):
            raise _types(
                f"{what} returned an observation of type {_kind(observation)}; it must be a str"
            )
        if len(observation) > self.max_obs_chars:
            raise _types(
                f"{what} returned an observation of {len(observation)} characters "
                f"(limit {self.max_obs_chars})"
            )
        _check_utf8(observation, what)


def _check_utf8(text: str, what: str) -> None:
    """Text an agent reads must encode (a lone surrogate stops any tokenizer)."""
    try:
        text.encode("utf-8", "strict")
    except UnicodeEncodeError as exc:
        raise _types(f"{what} returned text that is not valid UTF-8 ({exc.reason} at "
                     f"character {exc.start})") from None


def fault_failure(fault: EnvFault, what: str, stage: Stage) -> CheckFailed:
    """The verdict-ready failure for a fault in environment code."""
    if fault.violations or fault.kind == FaultKind.VIOLATION:
        reason = safety_reason(fault.violations) if fault.violations else fault.message
        return CheckFailed(Stage.SAFETY, reason)
    verb = _FAULT_WORDS.get(fault.kind, str(fault.kind))
    message = fault.message if len(fault.message) <= 400 else fault.message[:397] + "..."
    if fault.kind == FaultKind.LOAD:
        return CheckFailed(stage, f"the module did not load: {message}", fault=str(fault.kind))
    return CheckFailed(stage, f"{what} {verb}: {message}".rstrip(": "), fault=str(fault.kind))


def safety_reason(violations: Any) -> str:
    """``attempted network access: socket.connect ('127.0.0.1', 80)`` (+ how many more).

    The most serious attempt is named, not the first recorded: a library's harmless-looking
    lookup (urllib reading proxy variables) often comes before the network call itself.
    """
    items = list(violations)
    first = min(items, key=lambda v: _rank(v.category))  # min is stable: earliest of a rank
    words = WORDS.get(first.category, first.category)
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    return f"attempted {words}: {first.detail}{more}"


def _rank(category: str) -> int:
    return RANK.index(category) if category in RANK else len(RANK)


def _types(reason: str) -> CheckFailed:
    return CheckFailed(Stage.TYPES, reason)


def _kind(value: Any) -> str:
    if isinstance(value, Opaque):
        return value.type_name
    if isinstance(value, tuple):
        return f"tuple of length {len(value)}"
    return type(value).__name__


def _show(value: Any, limit: int = 40) -> str:
    text = repr(value.text if isinstance(value, Opaque) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
