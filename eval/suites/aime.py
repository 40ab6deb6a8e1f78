"""AIME 2024 / 2025 / 2026: the last non-empty ``\\boxed{}`` compared as an integer
(math-verify as fallback).

AIME 2026 problem II-10 exists in two contest versions (sum of all possible BC, 850, in
this data; greatest BC, 340, in the other): each question is kept with its own answer.
"""

from __future__ import annotations

from spade.eval.data import DataDir, UnreadableData, data_records
from spade.eval.suites._base import Item, Loaded, Scored, SingleTurnSuite, render
from spade.eval.suites._extract import last_boxed
from spade.eval.suites._mathcheck import equivalent
from spade.eval.suites._registry import SUITES

from spade.policy._types import Message


class _Aime(SingleTurnSuite):
    templates = ("aime.txt",)
    file: str

    def load(self, data: DataDir) -> Loaded:
        path = data.require(self.file)
        items: list[Item] = []
        for n, row in data_records(path, "AIME file"):
            try:
                fields = {"problem": row["problem"], "answer": str(row["answer"])}
                items.append(Item(row["id"], fields))
            except KeyError as exc:
                raise UnreadableData(path, f"line {n}: not an AIME record ({exc})") from exc
        return Loaded(items, [path])

    def messages(self, item: Item, sample: int) -> list[Message]:
        return [{"role": "user", "content": render("aime.txt", problem=item.data["problem"])}]

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        got = last_boxed(completion)
        if got is None:
            return Scored(None, 0.0, {"how": "no-boxed"})
        ok, how = equivalent(got, item.data["answer"])
        return Scored(got, 1.0 if ok else 0.0, {"how": how})

    def oracle(self, item: Item, sample: int) -> str:
        return f"The final answer is \\boxed{{{item.data['answer']}}}."


@SUITES.register("aime24")
class Aime24(_Aime):
    file = "aime/aime24.jsonl"


@SUITES.register("aime25")
class Aime25(_Aime):
    file = "aime/aime25.jsonl"


@SUITES.register("aime26")
class Aime26(_Aime):
    file = "aime/aime26.jsonl"
