"""Isolated execution of untrusted environment code (docs/sandbox.md).

``Sandbox`` owns fork servers (one per hash seed) inside bubblewrap; ``Sandbox.load``
returns an ``EnvHandle``, a proxy to one environment instance in its own worker process.
"""

from spade.sandbox._handle import EnvHandle
from spade.sandbox._sandbox import Sandbox
from spade.sandbox._types import (
    EnvFault,
    EnvInfo,
    FaultKind,
    Isolation,
    IsolationUnavailable,
    Opaque,
    SandboxError,
    SandboxLimits,
    Violation,
)

__all__ = [
    "EnvFault",
    "EnvHandle",
    "EnvInfo",
    "FaultKind",
    "Isolation",
    "IsolationUnavailable",
    "Opaque",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "Violation",
]
