"""A provider over a :mod:`spade.policy` backend (hf, vllm, openai).

Batches go to ``policy.chat`` in one call with one ``SamplingParams`` per request, each
carrying the request's own seed (derived from run seed, suite, item and sample), so a
completion depends on its request only: a rerun, a resumed run or a run with another
batch size draws the same samples (up to the backend's own numeric batching effects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade.eval.providers._base import Completion, Request

from spade.policy._types import ChatPolicy

if TYPE_CHECKING:
    from spade.eval.suites._base import Item, SingleTurnSuite


class PolicyProvider:
    def __init__(
        self, policy: ChatPolicy, spec: str, identity: dict[str, Any], batch_size: int
    ) -> None:
        self.policy = policy
        self.spec = spec
        self._identity = identity
        self.batch_size = batch_size

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def prepare(self, suite: SingleTurnSuite, pending: Sequence[tuple[Item, int]]) -> None:
        pass

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        if not requests:
            return []
        gens = self.policy.chat([r.messages for r in requests], [r.params for r in requests])
        return [Completion(g.text, g.finish_reason) for g in gens]

    def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if callable(close):
            close()
