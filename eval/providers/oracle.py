"""``oracle``: answers every request with the suite's reference, in the expected format.

A self-check that extraction and scoring give full marks on ground truth. Suites without
reference answers (the LiveCodeBench public subset has no reference solutions) refuse it
before any work starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spade.eval.providers._base import Completion, ProviderOptions, Request

from spade.errors import UserError

if TYPE_CHECKING:
    from spade.eval.suites._base import Item, SingleTurnSuite


class OracleProvider:
    spec = "oracle"

    def __init__(self, batch_size: int = 256) -> None:
        self.batch_size = batch_size

    def identity(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": "oracle", "sha256": None}

    def prepare(self, suite: SingleTurnSuite, pending: Sequence[tuple[Item, int]]) -> None:
        suite.check_oracle([item for item, _ in pending[:1]])

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(r.suite.oracle(r.item, r.sample)) for r in requests]

    def close(self) -> None:
        pass


def make(rest: str, options: ProviderOptions) -> OracleProvider:
    if rest:
        raise UserError(f"the oracle takes no argument (got 'oracle:{rest}')")
    return OracleProvider(options.batch_size or 256)
