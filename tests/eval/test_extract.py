"""Extraction rules on tricky completions."""

from __future__ import annotations

import pytest

from eval.suites._extract import answer_tag, as_integer, choice_letter, last_boxed, last_code_block
from eval.suites._mathcheck import equivalent


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


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Reasoning...\nANSWER: C", "C"),
        ("answer: b", None),  # lower-case letters are not choices
        ("**Answer:** (D)", "D"),
        ("ANSWER: A\nwait, actually\nANSWER: B", "B"),
        ("Answer: Apples are red", None),  # a word, not a letter
        (r"so the choice is \boxed{C}", "C"),
        (r"\boxed{(B)}", "B"),
        (r"\boxed{\text{A}}", "A"),
        ("The answer is (C).", "C"),
        ("the correct answer is D because", "D"),
        (r"The answer is (A). ANSWER: B", "B"),  # ANSWER: beats 'the answer is'
        (r"\boxed{A} ... The answer is (B)", "A"),  # boxed beats 'the answer is'
        ("ANSWER: E", None),  # not among ABCD
        ("I think it's B", None),
    ],
)
def test_choice_letter(text: str, want: str | None) -> None:
    assert choice_letter(text, "ABCD") == want


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
