"""The evaluated model acting through tool calls, shared by the agentic suites.

A suite builds one :class:`AgentSession` per episode (tool schemas, an environment that
executes calls, the episode seed), opens turns with the user's messages and calls
:func:`play_turn`; the backend for the provider comes from :func:`step_model_for`. The
conventions are SPADE's own tool-use conventions: the model's chat template with the tool
schemas, ``<tool_call>`` JSON (or XML) replies parsed by :mod:`spade.envs`, results fed
back as tool messages; OpenAI-compatible servers use native ``tools``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spade.eval.agent._environment import FunctionEnvironment, NoExecution, ToolEnvironment
from spade.eval.agent._loop import play_decided_turn, play_turn
from spade.eval.agent._models import (
    ScriptedStepModel,
    StepModel,
    TokenStepModel,
    encode_script,
    script_step,
    step_model_for,
    tools_system_text,
)
from spade.eval.agent._records import (
    END_CONTEXT,
    END_NO_CALL,
    END_RENDER_FAILED,
    END_STEP_CAP,
    CallRecord,
    StepRecord,
    Transcript,
    TurnRecord,
)
from spade.eval.agent._session import (
    END_SINGLE_STEP,
    AgentSession,
    Decision,
    PromptUnrenderable,
    Reply,
)

if TYPE_CHECKING:
    from spade.eval.suites._episode import EpisodeSuite


def __getattr__(name: str) -> Any:
    """``EpisodeSuite`` on demand: the suites import this package, not the reverse."""
    if name == "EpisodeSuite":
        from spade.eval.suites._episode import EpisodeSuite

        return EpisodeSuite
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "END_CONTEXT",
    "END_NO_CALL",
    "END_RENDER_FAILED",
    "END_SINGLE_STEP",
    "END_STEP_CAP",
    "AgentSession",
    "CallRecord",
    "Decision",
    "EpisodeSuite",
    "FunctionEnvironment",
    "NoExecution",
    "PromptUnrenderable",
    "Reply",
    "ScriptedStepModel",
    "StepModel",
    "StepRecord",
    "TokenStepModel",
    "ToolEnvironment",
    "Transcript",
    "TurnRecord",
    "encode_script",
    "play_decided_turn",
    "play_turn",
    "script_step",
    "step_model_for",
    "tools_system_text",
]
