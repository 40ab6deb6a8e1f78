"""The environment side of an agentic episode: whatever executes the model's tool calls.

A suite plugs its benchmark in here: BFCL's executable backends, tau2's domain tools, a
scenario class. The loop hands over every parsed call of one model step, in order, and
feeds the returned texts back to the model as tool messages, one per call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from spade.envs import ToolCall, tool_result_text


@runtime_checkable
class ToolEnvironment(Protocol):
    """Executes tool calls; one result text per call (errors are texts too, never raised)."""

    def execute(self, calls: Sequence[ToolCall]) -> list[str]: ...


class FunctionEnvironment:
    """Tools as plain Python callables keyed by tool name (keyword arguments).

    For small in-process environments and tests; an unknown tool or a raising tool comes
    back as an error text, as a real backend would answer.
    """

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self._functions = dict(functions)

    def execute(self, calls: Sequence[ToolCall]) -> list[str]:
        out = []
        for call in calls:
            fn = self._functions.get(call.name)
            if fn is None:
                out.append(f"Error: unknown tool {call.name!r}")
                continue
            try:
                out.append(tool_result_text(fn(**call.arguments)))
            except Exception as exc:  # the model's call failed; it sees why
                out.append(f"Error: {type(exc).__name__}: {exc}")
        return out


class NoExecution:
    """For single-step protocols that score the calls without running them."""

    def execute(self, calls: Sequence[ToolCall]) -> list[str]:
        names = json.dumps([c.name for c in calls])
        raise RuntimeError(f"this episode does not execute tool calls (got {names})")
