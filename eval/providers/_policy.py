"""A provider over a :mod:`spade.policy` backend (hf, vllm, openai).

Batches go to ``policy.chat`` in one call. The backends take one seed per call, so the
call's seed is derived from the seeds of the requests in it: a rerun with the same batch
size reproduces the same completions; a resumed run whose batches are cut differently
samples from the same distribution but not bit-for-bit the same text (greedy decoding,
T = 0, is unaffected).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from eval.providers._base import Request
from eval.suites._base import derive_seed
from spade.policy._types import ChatPolicy

if TYPE_CHECKING:
    from eval.suites._base import Item, SingleTurnSuite


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

    def generate(self, requests: Sequence[Request]) -> list[str]:
        if not requests:
            return []
        seed = derive_seed(*(r.params.seed for r in requests))
        params = replace(requests[0].params, seed=seed)
        if any(replace(r.params, seed=None) != replace(params, seed=None) for r in requests):
            raise ValueError("one batch must share its sampling parameters")
        gens = self.policy.chat([r.messages for r in requests], params)
        return [g.text for g in gens]

    def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if callable(close):
            close()
