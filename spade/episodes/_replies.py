"""What an environment sends back, checked before the runner or the policy touches it.

A generated environment controls everything its worker replies: a text with a lone
surrogate (which a tokenizer cannot encode), a reward of ``10**400`` (which ``float()``
cannot convert), a ``success_threshold`` or ``max_turns`` of any type, tool schemas of
any size. Each of these is one environment's fault, so each becomes an :class:`EnvFault`
of that episode -- never an exception that ends the whole batch of episodes, or the
training run around it. Sizes are capped before anything is parsed or rendered.
"""

from __future__ import annotations

import json
import math
from typing import Any

from spade.sandbox._types import EnvFault, EnvInfo, FaultKind

#: Longest observation, tool result or feedback text an episode accepts (characters).
MAX_TEXT_CHARS = 65_536
#: Largest magnitude of one step reward (returns are clipped to [-1, 1] anyway; a reward
#: beyond this is a broken environment, not a big win).
MAX_REWARD = 1e6
#: Most tools, and the largest JSON size of all tool schemas together (characters).
MAX_TOOLS = 64
MAX_TOOLS_CHARS = 65_536


def fault(message: str) -> EnvFault:
    return EnvFault(FaultKind.PROTOCOL, message)


def step_result(raw: Any) -> tuple[str, float, bool, bool]:
    """``(observation, reward, terminated, truncated)`` of a ``step`` reply, checked."""
    if not isinstance(raw, list | tuple) or len(raw) != 5:
        raise fault(f"step returned {type(raw).__name__}, not a 5-tuple")
    observation, value, terminated, truncated, _ = raw
    return (text(observation, "the observation"), reward(value),
            flag(terminated, "terminated"), flag(truncated, "truncated"))


def text(value: Any, what: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A ``str`` (exactly; numbers are shown as text) of at most ``limit`` characters that
    encodes as strict UTF-8."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise fault(f"{what} is a {type(value).__name__}, not text")
    if not isinstance(value, str):
        value = _number_text(value, what)
    if len(value) > limit:
        raise fault(f"{what} has {len(value)} characters (limit {limit})")
    try:
        value.encode("utf-8", "strict")
    except UnicodeEncodeError as exc:
        raise fault(f"{what} is not valid UTF-8 text ({exc.reason} at {exc.start})") from None
    return str.__str__(value)  # a plain str, whatever subclass came in


def _number_text(value: int | float, what: str) -> str:
    if isinstance(value, int) and value.bit_length() > 256:
        raise fault(f"{what} is an integer of {value.bit_length()} bits")
    return repr(value) if isinstance(value, float) else int.__repr__(value)


def reward(value: Any) -> float:
    """A finite real number of magnitude at most :data:`MAX_REWARD`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fault(f"step returned a reward of type {type(value).__name__}")
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        raise fault("step returned a reward too large for a float") from None
    if not math.isfinite(number):
        raise fault(f"step returned a non-finite reward {number!r}")
    if abs(number) > MAX_REWARD:
        raise fault(f"step returned a reward of {number:g} (limit +-{MAX_REWARD:g})")
    return number


def flag(value: Any, name: str) -> bool:
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise fault(f"step returned {name} of type {type(value).__name__}, not bool")


def printable(message: str, limit: int = 2_000) -> str:
    """A fault's message as storable text: invalid UTF-8 replaced, length capped."""
    message = message if len(message) <= limit else message[: limit - 3] + "..."
    return message.encode("utf-8", "replace").decode("utf-8")


def env_facts(info: EnvInfo) -> tuple[str, float, int, list[dict[str, Any]]]:
    """``(kind, success_threshold, max_turns, tools)`` of a loaded environment, checked."""
    kind = info.kind
    if kind not in ("game", "tool"):
        raise fault(f"the environment's kind {kind!r:.40} is neither game nor tool")
    threshold = info.success_threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise fault(f"success_threshold is a {type(threshold).__name__}, not a number")
    try:
        limit = float(threshold)
    except OverflowError:
        raise fault("success_threshold is too large for a float") from None
    if not math.isfinite(limit) or abs(limit) > MAX_REWARD:
        raise fault(f"success_threshold {limit!r} is not a finite number in range")
    turns = info.max_turns
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise fault(f"max_turns {turns!r:.40} is not a positive integer")
    return kind, limit, turns, tools(info.tools) if kind == "tool" else []


def tools(value: Any) -> list[dict[str, Any]]:
    """The tool schemas, if few and small enough to show an agent (checked before any
    schema work: a schema's size, not its content, is what can stall the parent)."""
    if not isinstance(value, list | tuple):
        raise fault(f"the tool list is a {type(value).__name__}")
    if len(value) > MAX_TOOLS:
        raise fault(f"the environment defines {len(value)} tools (limit {MAX_TOOLS})")
    try:
        shown = json.dumps(list(value), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise fault(f"the tool schemas are not plain JSON ({type(exc).__name__})") from None
    text(shown, "the JSON of the tool schemas", MAX_TOOLS_CHARS)
    if not all(isinstance(t, dict) for t in value):
        raise fault("a tool schema is not an object")
    return [dict(t) for t in value]
