"""Answer extraction rules, each a pure function over the completion text.

Rules are deliberately simple and written down here so a score can be audited from the
per-sample record (which stores what was extracted):

- ``last_boxed``: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) with
  balanced braces; ``\\boxed 5`` (no braces) is accepted too.
- ``choice_letter``: for multiple choice, in order of precedence (the first rule that
  matches anywhere wins, and within a rule the LAST match in the text):
  1. ``ANSWER: X`` (case-insensitive "answer", optional markdown ``**``/parentheses);
  2. ``\\boxed{X}`` whose content is one letter (optionally ``(X)`` or ``\\text{X}``);
  3. ``the answer is (X)`` / ``the answer is X`` (also "the correct answer is").
  X must be an upper-case letter among the allowed choices, followed by a non-letter.
- ``answer_tag``: the stripped content of the last ``<answer>...</answer>``.
- ``last_code_block``: the body of the last fenced block (```` ```lang ... ``` ````).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BOX = re.compile(r"\\(?:boxed|fbox)\s*")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` with balanced braces, or None."""
    starts = [m.end() for m in _BOX.finditer(text)]
    for start in reversed(starts):
        if start < len(text) and text[start] == "{":
            depth = 0
            for i in range(start, len(text)):
                c = text[i]
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        return text[start + 1 : i].strip()
            continue  # unbalanced: try an earlier one
        m = re.match(r"([^\s$]+)", text[start:])
        if m:
            return m.group(1).strip()
    return None


def _letters(choices: str) -> str:
    return "".join(re.escape(c) for c in choices)


def choice_letter(text: str, choices: str = "ABCD") -> str | None:
    """The chosen letter per the precedence above, or None."""
    ls = _letters(choices)
    rules = [
        rf"(?i:answer)\s*\**\s*[:：]\s*\**\s*\(?\s*([{ls}])\s*\)?(?![A-Za-z])",
        rf"\\boxed\s*\{{\s*(?:\\text\{{\s*)?\(?([{ls}])\)?\s*\}}?\s*\}}",
        rf"(?i:the\s+(?:correct\s+|final\s+)?answer\s+is)\s*[:：]?\s*\**\s*\(?([{ls}])\)?(?![A-Za-z])",
    ]
    for rule in rules:
        found = re.findall(rule, text)
        if found:
            return str(found[-1])
    return None


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def answer_tag(text: str) -> str | None:
    found = _ANSWER_TAG.findall(text)
    return found[-1].strip() if found else None


_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def last_code_block(text: str) -> str | None:
    """Body of the last complete fenced code block, or None."""
    found = _FENCE.findall(text)
    return found[-1] if found else None


def as_integer(text: str) -> int | None:
    """An integer from a short answer like ``042``, ``1,000``, ``$17$``, ``17.0``; else None."""
    s = text.strip().strip("$").strip()
    s = re.sub(r"\\text\{\s*([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\(?:!|,|;|\s)", "", s)
    s = s.replace("{,}", "").replace(",", "").replace(" ", "")
    s = re.sub(r"\^\{?\\circ\}?$", "", s)
    s = s.rstrip(".")
    if not re.fullmatch(r"[+-]?\d+(?:\.\d+)?", s):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    return int(d) if d == d.to_integral_value() else None
