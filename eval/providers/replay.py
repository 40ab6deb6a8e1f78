"""``replay:FILE.jsonl``: recorded completions keyed by (suite, item id, sample).

Each line is ``{"suite", "id", "sample", "completion"}`` (other fields ignored). A request
with no recorded completion is an error, never a zero: the whole suite is checked before
anything is scored. ``replay:FILE.jsonl#delay_s=0.05`` sleeps per request (for tests and
benchmarks that need a slow provider).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.eval.data import sha256_file
from spade.eval.providers._base import Completion, ProviderOptions, Request

from spade.errors import UserError
from spade.textfile import iter_jsonl

if TYPE_CHECKING:
    from spade.eval.suites._base import Item, SingleTurnSuite

Key = tuple[str, str, int]


def _load(path: Path) -> dict[Key, str]:
    out: dict[Key, str] = {}
    for n, rec in iter_jsonl(path, "replay file"):
        try:
            key = (str(rec["suite"]), str(rec["id"]), int(rec["sample"]))
            completion = rec["completion"]
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{path}:{n}: not a replay record ({exc})") from exc
        if not isinstance(completion, str):
            raise UserError(f"{path}:{n}: completion must be a string")
        if key in out and out[key] != completion:
            raise UserError(f"{path}:{n}: two different completions for {key}")
        out[key] = completion
    return out


class ReplayProvider:
    def __init__(self, path: Path, delay_s: float = 0.0, batch_size: int = 64) -> None:
        self.path = path
        self.spec = f"replay:{path}"
        self.delay_s = delay_s
        self.batch_size = batch_size
        self._records = _load(path)

    def identity(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": f"replay:{self.path.stem}",
                "sha256": sha256_file(self.path)}

    def prepare(self, suite: SingleTurnSuite, pending: Sequence[tuple[Item, int]]) -> None:
        missing = [(item.key, s) for item, s in pending
                   if (suite.id, item.key, s) not in self._records]
        if missing:
            first = ", ".join(f"id={i!r} sample={s}" for i, s in missing[:3])
            raise UserError(
                f"replay file {self.path} lacks {len(missing)} completion(s) for suite "
                f"{suite.id} (e.g. {first})"
            )

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for r in requests:
            if self.delay_s:
                time.sleep(self.delay_s)
            key = (r.suite.id, r.item.key, r.sample)
            if key not in self._records:
                raise UserError(f"replay file {self.path} has no completion for {key}")
            out.append(Completion(self._records[key]))
        return out

    def close(self) -> None:
        pass


def make(rest: str, options: ProviderOptions) -> ReplayProvider:
    path, _, frag = rest.partition("#")
    if not path:
        raise UserError("replay needs a file: --model replay:FILE.jsonl")
    delay = 0.0
    if frag:
        key, _, value = frag.partition("=")
        if key != "delay_s":
            raise UserError(f"unknown replay option {key!r} (known: delay_s)")
        try:
            delay = float(value)
        except ValueError as exc:
            raise UserError(f"replay delay_s must be a number, got {value!r}") from exc
    return ReplayProvider(Path(path).expanduser(), delay, options.batch_size or 64)
