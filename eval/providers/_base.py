"""The provider contract, the request it answers, and the ``--model SPEC`` registry.

A provider turns requests into completions. A request carries the suite, item and sample
index as well as the messages, because some providers answer by key rather than by text
(``replay`` looks completions up, ``oracle`` asks the suite for its reference). Providers
are found by scheme through an entry point string, so ``import eval`` never imports
torch, vllm or openai; the module loads only when that scheme is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from spade.errors import UserError
from spade.modelspec import EVAL_SPECS, parse_spec
from spade.policy._types import Message, SamplingParams

if TYPE_CHECKING:
    from spade.eval.suites._base import Item, SingleTurnSuite


@dataclass(frozen=True)
class Completion:
    """One completion: its ``text`` and why generation stopped (``finish_reason``: "stop",
    "length", or "prompt_too_long" when the prompt alone filled the context window and
    nothing was generated). Recorded and keyed answers (replay, oracle) count as "stop"."""

    text: str
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Request:
    """One completion to produce: (suite, item, sample) plus the prompt and sampling."""

    suite: SingleTurnSuite
    item: Item
    sample: int
    messages: list[Message]
    params: SamplingParams
    tools: list[dict[str, Any]] | None = field(default=None)  # for agentic suites


@runtime_checkable
class Provider(Protocol):
    """Produces completions for batches of requests."""

    spec: str
    #: how many requests the runner hands over per call (and per fsync'd store append)
    batch_size: int

    def identity(self) -> dict[str, Any]:
        """``{"spec", "name", "sha256"}`` for results.json (sha256 may be None)."""
        ...

    def prepare(self, suite: SingleTurnSuite, pending: Sequence[tuple[Item, int]]) -> None:
        """Fail early (UserError) if this provider cannot answer these requests."""
        ...

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """One completion per request, in order."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ProviderOptions:
    """Run-level knobs a provider may use."""

    batch_size: int | None = None
    device: str | None = None  # hf: "cpu" | "cuda" | None (auto)
    dtype: str | None = None  # hf/vllm: "float32" | "bfloat16" | ...
    timeout_s: float = 600.0  # openai: per request


#: scheme -> "module:factory" for every scheme of :data:`spade.modelspec.EVAL_SPECS`; a
#: factory is ``f(argument_of_spec, options) -> Provider``
ENTRY_POINTS: Mapping[str, str] = MappingProxyType({
    "hf": "spade.eval.providers.hf:make",
    "vllm": "spade.eval.providers.vllm:make",
    "openai": "spade.eval.providers.openai:make",
    "replay": "spade.eval.providers.replay:make",
    "oracle": "spade.eval.providers.oracle:make",
    "smollm2": "spade.eval.providers.smollm2:make",
})


def make_provider(spec: str, options: ProviderOptions | None = None) -> Provider:
    """Build the provider for ``--model SPEC`` (read by :func:`spade.modelspec.parse_spec`)."""
    parsed = parse_spec(spec, EVAL_SPECS)
    module_name, _, attr = ENTRY_POINTS[parsed.scheme].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"model provider {parsed.scheme!r} unavailable: {exc}") from exc
    factory: Callable[[str, ProviderOptions], Provider] = getattr(module, attr)
    return factory(parsed.argument, options or ProviderOptions())
