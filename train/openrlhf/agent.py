"""The class OpenRLHF loads through ``--train.agent_func_path`` (GPU hosts only).

The launcher writes a one-line file into the run directory that imports
:class:`AgentExecutor` from here; OpenRLHF builds it with no arguments once per vLLM actor.
"""

from __future__ import annotations

from openrlhf.utils.agent import AgentExecutorBase
from spade.train.openrlhf._executor import TicketExecutor

__all__ = ["AgentExecutor"]


class AgentExecutor(TicketExecutor, AgentExecutorBase):
    """SPADE's ticket executor on OpenRLHF's base class (see ``spade.train.openrlhf._executor``)."""
