"""Where episodes get their environment instances: a factory or a pooling provider."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from spade.sandbox._types import EnvFault

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle


class EnvProvider(Protocol):
    """Hands out one environment instance per episode and takes it back afterwards."""

    def acquire(self, env_id: str) -> EnvHandle: ...

    def release(self, env_id: str, handle: EnvHandle, *, broken: bool) -> None: ...


HandleFactory = Callable[[str], "EnvHandle"]


class FreshHandles:
    """A plain factory as a provider: a new instance per episode, closed when it ends."""

    def __init__(self, factory: HandleFactory) -> None:
        self._factory = factory

    def acquire(self, env_id: str) -> EnvHandle:
        return self._factory(env_id)

    def release(self, env_id: str, handle: EnvHandle, *, broken: bool) -> None:
        with contextlib.suppress(EnvFault):
            handle.close()


def as_provider(handles: EnvProvider | HandleFactory) -> EnvProvider:
    if hasattr(handles, "acquire") and hasattr(handles, "release"):
        return handles
    return FreshHandles(handles)
