"""Cross-check of the AIME scorer against lm-eval's on identical completions.

lm-eval's ``aime`` task (``lm_eval/tasks/aime/utils.py::process_results``) takes the last
``\\boxed{}`` (else the text between the first and last ``$``) and compares strings after
MATH-style normalisation. Ours takes the last ``\\boxed{}`` and compares integers (math-verify
for other forms). They must agree on plain boxed answers; the documented differences are
leading zeros (we accept ``\\boxed{033}`` for 33, lm-eval does not) and unboxed answers
(lm-eval accepts ``$33$``, our protocol requires ``\\boxed{}``). The shared AIME 2024 file
stores 7 of its 30 answers zero-padded (``"055"``): there lm-eval's string compare marks
a correct ``\\boxed{55}`` wrong, which the AIME rule "compare as integers" avoids.
"""

from __future__ import annotations

import pytest
from _evalrun import data_dir
from spade.eval._protocol import build
from spade.eval.data import DataDir
from spade.eval.suites import SUITES

lm_aime = pytest.importorskip("lm_eval.tasks.aime.utils")


def _ours(suite_id: str) -> tuple[object, list]:
    suite = SUITES.get(suite_id)(build(suite_id, {"samples": 1}), 0)
    return suite, suite.load(DataDir(data_dir())).items


@pytest.mark.parametrize("suite_id", ["aime24", "aime25"])
def test_agreement_on_identical_completions(suite_id: str) -> None:
    suite, items = _ours(suite_id)
    agree = total = padded = 0
    for item in items:
        if item.data["answer"] != str(int(item.data["answer"])):
            padded += 1
            text = f"\\boxed{{{int(item.data['answer'])}}}"
            assert suite.score(item, 0, text).score == 1.0
            assert lm_aime.process_results({"Answer": item.data["answer"]}, [text]) == {
                "exact_match": 0}
            continue
        ans = int(item.data["answer"])
        doc = {"Answer": item.data["answer"]}
        for text in (f"so \\boxed{{{ans}}}.", f"\\boxed{{{ans + 1}}}", f"$\\boxed{{{ans}}}$",
                     f"first \\boxed{{{ans + 3}}} then \\boxed{{{ans}}}", "no answer"):
            ours = suite.score(item, 0, text).score
            theirs = float(lm_aime.process_results(doc, [text])["exact_match"])
            agree += ours == theirs
            total += 1
    assert agree == total == 5 * (len(items) - padded)
    assert padded == {"aime24": 7, "aime25": 0}[suite_id]


def test_documented_differences() -> None:
    suite, items = _ours("aime25")
    item = next(i for i in items if int(i.data["answer"]) < 100
                and i.data["answer"] == str(int(i.data["answer"])))
    ans = int(item.data["answer"])
    doc = {"Answer": item.data["answer"]}
    padded = f"\\boxed{{{ans:03d}}}"
    assert suite.score(item, 0, padded).score == 1.0
    assert lm_aime.process_results(doc, [padded])["exact_match"] == 0
    unboxed = f"The answer is ${ans}$"
    assert suite.score(item, 0, unboxed).score == 0.0
    assert lm_aime.process_results(doc, [unboxed])["exact_match"] == 1
