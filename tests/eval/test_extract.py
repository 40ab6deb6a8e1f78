"""Extraction rules on tricky completions."""

from __future__ import annotations

import pytest
from spade.eval.suites._extract import (
    answer_tag,
    as_integer,
    choice_letter,
    last_boxed,
    last_code_block,
)
from spade.eval.suites._mathcheck import equivalent


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (r"so \boxed{12} but wait \boxed{13}.", "13"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{{3}^{2}} done", "{3}^{2}"),
        (r"answer \boxed 7 end", "7"),
        (r"\fbox{42}", "42"),
        (r"\boxed{5} then an unclosed \boxed{6", "5"),
        ("no box here: 17", None),
        ("", None),
    ],
)
def test_last_boxed(text: str, want: str | None) -> None:
    assert last_boxed(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("042", 42), ("1,000", 1000), ("$17$", 17), ("17.0", 17), (r"\text{ 5 }", 5),
        ("90^\\circ", 90), ("17.5", None), ("x=3", None), (r"\frac{1}{2}", None), ("-4", -4),
    ],
)
def test_as_integer(text: str, want: int | None) -> None:
    assert as_integer(text) == want


def test_math_verify_fallback_for_non_integer_forms() -> None:
    assert equivalent(r"\frac{6}{3}", "2") == (True, "math-verify")
    assert equivalent(r"\sqrt{4}", "2")[0] is True
    assert equivalent(r"\frac{1}{3}", "2")[0] is False
    assert equivalent("033", "33") == (True, "integer")
    assert equivalent("34", "33") == (False, "integer")
    assert equivalent(r"\frac{", "33")[0] is False


#: (completion, letter) as inspect-ai's multiple_choice reads them, plus the two families
#: the prompt's own form implies: "$C" (lone dollar) reads as C, and a hedge is no answer
CHOICE_CASES = [
    ("Reasoning...\nANSWER: C", "C"),
    ("Reasoning...\nANSWER: $C$", "C"),
    ("Reasoning...\nANSWER: $C", "C"),
    ("answer: b", "B"),  # lower-case letters count
    ("ANSWER: d.", "D"),
    ("ANSWER: (C)", "C"),
    ("ANSWER: **C**", "C"),
    ("**ANSWER: C**", "C"),
    ("ANSWER:C", "C"),
    ("ANSWER: A\nwait, actually\nANSWER: B", "B"),
    ("Answer: A is tempting, but no.\n\nANSWER: C", "C"),  # the final statement wins
    ("Early on, Answer: B seems right... Final: ANSWER: D", "D"),
    ("ANSWER: A or B", None),  # hedged
    ("ANSWER: A, B", None),
    ("ANSWER: A/B", None),
    ("ANSWER: A and B", None),
    ("ANSWER: AB", None),
    ("Answer: Apples are red", None),  # a word, not a letter
    (r"so the choice is \boxed{C}", None),  # not the requested format
    ("The answer is (C).", None),
    ("ANSWER: E", None),  # not among ABCD
    ("ANSWER: $x$", None),
    ("I think it's B", None),
]


@pytest.mark.parametrize(("text", "want"), CHOICE_CASES)
def test_choice_letter(text: str, want: str | None) -> None:
    assert choice_letter(text, "ABCD") == want


def test_choice_letter_agrees_with_inspect_ai() -> None:
    """Every case outside the two documented families reads as inspect-ai reads it."""
    solver = pytest.importorskip("inspect_ai.solver._multiple_choice")
    from types import SimpleNamespace

    ours_only = {"Reasoning...\nANSWER: $C", "ANSWER: A/B"}
    for text, want in CHOICE_CASES:
        state = SimpleNamespace(output=SimpleNamespace(completion=text), choices=[0, 1, 2, 3])
        theirs = solver.parse_answers(state, False)
        if text not in ours_only:
            assert theirs == ({want} if want else set()), text


def test_last_non_empty_box() -> None:
    assert last_boxed("so \\boxed{42}. Put your final answer within \\boxed{}.") == "42"
    assert last_boxed("\\boxed{1} then \\boxed{ }") == "1"
    assert last_boxed("\\boxed{}") is None


def test_answer_tag_takes_last_and_strips() -> None:
    assert answer_tag("<answer>1</answer> then <answer>\n 2 \n</answer>") == "2"
    assert answer_tag("<answer>unclosed") is None
    assert answer_tag("<answer></answer>") == ""


def test_last_code_block() -> None:
    text = "```python\nprint(1)\n```\nand better:\n```py\nprint(2)\n```\n"
    assert last_code_block(text) == "print(2)\n"
    assert last_code_block("```\nx = 1\n```") == "x = 1\n"
    assert last_code_block("```python\nunterminated") is None
    assert last_code_block("no code") is None
