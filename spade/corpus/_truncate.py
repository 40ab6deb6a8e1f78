"""Cutting a document to a prompt budget without breaking a sentence or a word."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s)|\n\s*\n")


def truncate_text(text: str, max_chars: int, *, min_fraction: float = 0.5) -> str:
    """``text`` cut to at most ``max_chars`` characters.

    Prefers the last sentence end (``.``, ``!``, ``?`` followed by space, or a paragraph
    break) inside the budget; if that would keep less than ``min_fraction`` of the budget it
    falls back to the last whitespace, and only then to a hard cut. Trailing whitespace is
    dropped. Text within the budget is returned unchanged.
    """
    if max_chars < 0:
        raise ValueError(f"max_chars must be >= 0, got {max_chars}")
    if len(text) <= max_chars:
        return text
    window = text[: max_chars + 1]  # one extra char: a boundary right after the budget counts
    floor = int(max_chars * min_fraction)
    cut = -1
    for match in _SENTENCE_END.finditer(window):
        end = match.end() if match.group(0)[0] in ".!?" else match.start()
        if end <= max_chars:
            cut = end
    if cut < floor:
        space = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        cut = space if space >= floor else max_chars
    return text[:cut].rstrip()
