"""Typed values shared by the sandbox and its callers."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from spade.errors import SpadeError


class Isolation(StrEnum):
    """How strongly untrusted code is contained.

    ``bwrap`` is the default and the only level meant for generated code. ``rlimits`` keeps
    resource limits, seccomp and audit hooks but no namespaces; ``none`` is a plain worker
    process. The weaker levels must be chosen explicitly and warn loudly.
    """

    BWRAP = "bwrap"
    RLIMITS = "rlimits"
    NONE = "none"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to every worker (per environment instance)."""

    memory_mb: int = 2048  # RLIMIT_AS
    cpu_s: int = 120  # RLIMIT_CPU over the worker's life
    open_files: int = 64  # RLIMIT_NOFILE
    file_size_mb: int = 16  # RLIMIT_FSIZE
    call_timeout_s: float = 5.0  # wall clock per step/tool call/solution
    reset_timeout_s: float | None = None  # wall clock per reset (None: 2 x call_timeout_s)
    load_timeout_s: float = 10.0  # wall clock for module import + construction
    max_response_bytes: int = 1 << 20  # a bigger reply from the worker is a fault
    max_output_bytes: int = 16_384  # captured stdout/stderr kept (the rest is counted)
    max_output_total_bytes: int = 1 << 20  # more output than this is a resource violation
    #: size of the sandbox's /tmp tmpfs: the tmp base of a fork server's workers (under
    #: bwrap each worker mounts a tmpfs of its own over it; at level rlimits they share it)
    tmp_mb: int = 256
    tmp_worker_mb: int = 64  # one worker holding more in its own tmp is a resource violation
    #: files and directories one worker may hold in its own tmp (more is a violation; under
    #: bwrap the kernel refuses a few beyond it, and the size a bit beyond tmp_worker_mb)
    tmp_worker_inodes: int = 4096
    #: threads one worker may run at once, its main thread included (under bwrap its init
    #: decides each thread start from the kernel's notification: a thread is a task with
    #: a pid in every enclosing namespace, the host's included, and no memory limit
    #: counts it; a start beyond this ends the worker, named)
    max_threads: int = 128
    #: how long each side of the control pipes polls for the next frame before it blocks
    #: (0: block at once). Waking a blocked process on another, idle CPU can cost tens of
    #: microseconds on a virtual machine, more than a whole step; a short poll keeps both
    #: ends awake across back-to-back calls at the price of this much CPU per wait.
    spin_us: int = 100


class FaultKind(StrEnum):
    """Why a call into environment code did not return normally."""

    TIMEOUT = "timeout"  # wall-clock limit hit; the worker was killed
    CRASH = "crash"  # the worker died (segfault, os._exit, memory kill, ...)
    VIOLATION = "violation"  # the code attempted a forbidden operation
    EXCEPTION = "exception"  # environment code raised
    PROTOCOL = "protocol"  # oversize or malformed reply, closed control channel
    LOAD = "load"  # module did not import or define exactly one *Env class


@dataclass(frozen=True)
class Violation:
    """One forbidden operation attempted by environment code."""

    # network | filesystem | process | signal | environment | native | tampering | resource
    category: str
    detail: str  # e.g. "socket.connect ('127.0.0.1', 80)"

    def __str__(self) -> str:
        return f"{self.category}: {self.detail}"


class SandboxError(SpadeError):
    """Infrastructure failure: the sandbox itself could not do its job (exit code 2)."""


class IsolationUnavailable(SandboxError):
    """The requested isolation level cannot be provided on this machine."""


class EnvFault(Exception):
    """Environment code misbehaved; the environment is invalid, not the infrastructure."""

    def __init__(
        self,
        kind: FaultKind,
        message: str,
        violations: tuple[Violation, ...] = (),
        output: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.violations = violations
        self.output = output

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class Opaque:
    """A value the worker could not express as data (kept as its type name and repr)."""

    type_name: str
    text: str


@dataclass(frozen=True)
class EnvInfo:
    """Static facts about a loaded environment, read once after construction."""

    class_name: str
    kind: str  # "game" | "tool"
    max_turns: int
    success_threshold: float
    has_solution: bool
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI function schemas
