"""Answer extraction rules, each a pure function over the completion text.

Rules are deliberately simple and written down here so a score can be audited from the
per-sample record (which stores what was extracted):

- ``last_boxed``: the content of the last NON-EMPTY ``\\boxed{...}`` (or ``\\fbox{...}``)
  with balanced braces (an empty ``\\boxed{}`` echoed from the instruction is skipped);
  ``\\boxed 5`` (no braces) is accepted too.
- ``choice_letter``: multiple choice read the way inspect-ai's ``multiple_choice`` reads
  ``ANSWER: $LETTER``. Wrappers around a short answer are removed first (``$C$``, a lone
  ``$C`` right after "ANSWER:", ``**C**``, ``(C)``). Then the LAST line that starts with
  ``ANSWER:`` (any case) wins; only when no line does, the last ``ANSWER:`` anywhere. The
  text after it must be exactly one allowed letter (any case, a trailing period allowed):
  a hedge naming two letters (``A or B``, ``A/B``, ``A, B``) or a sentence is no answer.
  ``\\boxed{C}`` or "the answer is C" without the requested line is no answer either,
  as in the reference scorers.
- ``answer_tag``: the stripped content of the last ``<answer>...</answer>``.
- ``last_code_block``: the body of the last fenced block (```` ```lang ... ``` ````).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BOX = re.compile(r"\\(?:boxed|fbox)\s*")


def last_boxed(text: str) -> str | None:
    """Content of the last non-empty ``\\boxed{...}`` with balanced braces, or None."""
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
                        break
            else:
                continue  # unbalanced: try an earlier one
            content = text[start + 1 : i].strip()
            if content:
                return content
            continue  # an empty box (echoed instruction): the one before counts
        m = re.match(r"([^\s$]+)", text[start:])
        if m:
            return m.group(1).strip()
    return None


def _unwrap(text: str) -> str:
    text = re.sub(r"\$\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\$", r"\1", text)
    text = re.sub(r"(?i)(answer\s*:\s*)\$\s*(?=[A-Za-z](?![A-Za-z\d]))", r"\1", text)
    text = re.sub(r"\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*", r"\1", text)
    return re.sub(r"(?i)(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|\Z))", r"\1\2\3", text)


_LINE_ANSWER = re.compile(r"(?im)^ANSWER\s*:\s*([A-Za-z\d ,/]+?)\s*(?:\.\s*)?$")
_ANY_ANSWER = re.compile(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,/]+)(?:[^\w/]|$)")


def choice_letter(text: str, choices: str = "ABCD") -> str | None:
    """The one chosen letter per the rules above, or None."""
    text = _unwrap(text)
    found = _LINE_ANSWER.findall(text) or _ANY_ANSWER.findall(text)
    if not found:
        return None
    answer = found[-1].strip().rstrip(".").upper()
    tokens = [t for t in re.split(r"[\s,/]+", answer) if t]
    if len(tokens) == 1 and len(tokens[0]) == 1 and tokens[0] in choices:
        return tokens[0]
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
