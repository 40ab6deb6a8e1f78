"""GPQA-Diamond: four choices shuffled per (item, sample) with a derived, recorded seed.

The correct answer is always the file's "Correct Answer" column. The permutation of each
sample comes from ``derive_seed(run seed, "gpqa_diamond/choices", item id, sample)`` (not
the sampling seed of that request), so it is the
same on every rerun and resume and is written into the per-sample record.
"""

from __future__ import annotations

import csv
import random

from spade.eval.data import DataDir, UnreadableData
from spade.eval.suites._base import Item, Loaded, Scored, SingleTurnSuite, render
from spade.eval.suites._extract import choice_letter
from spade.eval.suites._registry import SUITES

from spade.policy._types import Message
from spade.seeds import derive_seed

FILE = "gpqa/gpqa_diamond.csv"
COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
           "Incorrect Answer 3")
LETTERS = "ABCD"


@SUITES.register("gpqa_diamond")
class GpqaDiamond(SingleTurnSuite):
    templates = ("gpqa.txt",)
    def load(self, data: DataDir) -> Loaded:
        path = data.require(FILE)
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in (*COLUMNS, "Record ID") if c not in (reader.fieldnames or [])]
            if missing:
                raise UnreadableData(path, f"not the GPQA csv (no column(s) {missing})")
            items = [
                Item(row["Record ID"], {c: row[c].strip() for c in COLUMNS}) for row in reader
            ]
        return Loaded(items, [path])

    def permutation(self, item: Item, sample: int) -> list[int]:
        """Index order of [correct, wrong1, wrong2, wrong3] as shown to the model."""
        order = [0, 1, 2, 3]
        seed = derive_seed(self.seed, f"{self.id}/choices", item.key, sample)
        random.Random(seed).shuffle(order)
        return order

    def correct_letter(self, item: Item, sample: int) -> str:
        return LETTERS[self.permutation(item, sample).index(0)]

    def messages(self, item: Item, sample: int) -> list[Message]:
        options = [item.data[c] for c in COLUMNS[1:]]
        shown = [options[i] for i in self.permutation(item, sample)]
        text = render("gpqa.txt", question=item.data["Question"],
                      a=shown[0], b=shown[1], c=shown[2], d=shown[3])
        return [{"role": "user", "content": text}]

    def score(self, item: Item, sample: int, completion: str) -> Scored:
        target = self.correct_letter(item, sample)
        got = choice_letter(completion, LETTERS)
        order = "".join(str(i) for i in self.permutation(item, sample))
        return Scored(got, 1.0 if got == target else 0.0, {"target": target, "order": order})

    def oracle(self, item: Item, sample: int) -> str:
        return f"ANSWER: {self.correct_letter(item, sample)}"
