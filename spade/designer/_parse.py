"""Parse a designer reply into environment source and hint.

Small models break the contract in predictable ways, so the parser is lenient where the
intent is clear and precise where it is not:

- reasoning (``<think>`` blocks, orphan ``</think>``, an unclosed ``<think>``) is removed
  with the same rules the agent's replies follow (``spade.envs.strip_think``);
- fences may be ```` ```python ````, ```` ```py ````, any other tag, or bare ```` ``` ````; a
  closing fence may have text after it on its line; a fence left open runs to the
  ``<hint>`` tag or the end of the reply;
- with several blocks, the LAST one that defines a class ending in ``Env`` wins (models
  often show a draft first); a reply without any fence that still defines such a class is
  taken as code from its first ``import``/``from``/``class`` line;
- the hint is the last ``<hint>...</hint>`` outside the code (an unclosed ``<hint>`` runs to
  the end); missing, empty and over-long hints are named failures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from spade.envs import strip_think

#: Longest accepted hint; a hint is one to three sentences.
MAX_HINT_CHARS = 600

_FENCE_OPEN = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n", re.MULTILINE)
# A closing fence starts a line (text may follow it, e.g. ```<hint>); failing that, a stray
# ``` at the end of a code line still closes the block.
_FENCE_CLOSE = re.compile(r"^[ \t]*```(?![\w`])", re.MULTILINE)
_FENCE_CLOSE_LOOSE = re.compile(r"```[ \t]*$", re.MULTILINE)
_ENV_CLASS = re.compile(r"^class[ \t]+([A-Za-z_]\w*Env)\b[ \t]*[(:]", re.MULTILINE)
_CODE_START = re.compile(r"^(?:from|import|class)[ \t]+\w", re.MULTILINE)
_HINT_OPEN = re.compile(r"<hint>", re.IGNORECASE)
_HINT_CLOSE = re.compile(r"</hint>", re.IGNORECASE)


class ParseFailure(StrEnum):
    """Why a reply did not yield an environment (and hint)."""

    EMPTY_REPLY = "empty reply"
    NO_CODE_BLOCK = "no code block"
    NO_ENV_CLASS = "no class ending in Env"
    NO_HINT = "no <hint> tag"
    EMPTY_HINT = "empty hint"
    HINT_TOO_LONG = "hint too long"


@dataclass(frozen=True)
class DesignParse:
    """What was found in one reply. ``failure`` is None when it is usable."""

    source: str | None
    hint: str | None
    class_name: str | None = None
    failure: ParseFailure | None = None
    detail: str = ""  # extra words for the failure (e.g. the hint's length)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def reason(self) -> str:
        """One line for logs and metrics: the failure and its detail, or ''."""
        if self.failure is None:
            return ""
        return f"{self.failure}: {self.detail}" if self.detail else str(self.failure)


@dataclass(frozen=True)
class _Block:
    start: int  # of the opening fence
    end: int  # just past the closing fence (or the end of the code when unclosed)
    code: str


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    pos = 0
    while (opening := _FENCE_OPEN.search(text, pos)) is not None:
        body = opening.end()
        closing = _FENCE_CLOSE.search(text, body) or _FENCE_CLOSE_LOOSE.search(text, body)
        if closing is not None:
            blocks.append(_Block(opening.start(), closing.end(), text[body : closing.start()]))
            pos = closing.end()
            continue
        hint = _HINT_OPEN.search(text, body)
        stop = hint.start() if hint is not None else len(text)
        blocks.append(_Block(opening.start(), stop, text[body:stop]))
        break
    return blocks


def _env_class(code: str) -> str | None:
    names = _ENV_CLASS.findall(code)
    return names[-1] if names else None


def _find_hint(text: str) -> str | None:
    opens = list(_HINT_OPEN.finditer(text))
    if not opens:
        return None
    start = opens[-1].end()
    closing = _HINT_CLOSE.search(text, start)
    return text[start : closing.start() if closing else len(text)]


def parse_design(
    text: str, *, require_hint: bool = True, max_hint_chars: int = MAX_HINT_CHARS
) -> DesignParse:
    """Extract the environment module and the hint from a designer reply.

    ``require_hint=False`` is for ``hint_source`` ``self``/``external``: the hint comes from
    a separate call, so a missing tag is no failure (a present one is still returned).
    """
    reply = strip_think(text or "")
    if not reply:
        return DesignParse(None, None, failure=ParseFailure.EMPTY_REPLY)

    blocks = _blocks(reply)
    chosen: _Block | None = None
    for block in blocks:
        if _env_class(block.code) is not None:
            chosen = block
    if chosen is None and not blocks:
        unfenced = _unfenced_code(reply)
        if unfenced is not None:
            chosen = unfenced
    if chosen is None:
        if blocks:
            return DesignParse(
                None, None, failure=ParseFailure.NO_ENV_CLASS,
                detail=f"{len(blocks)} code block(s), none defines one",
            )
        return DesignParse(None, None, failure=ParseFailure.NO_CODE_BLOCK)

    source = chosen.code.strip("\n").rstrip() + "\n"
    class_name = _env_class(source)
    outside = reply[: chosen.start] + "\n" + reply[chosen.end :]
    for block in blocks:  # a <hint> written inside some other code block does not count
        if block is not chosen:
            outside = outside.replace(block.code, "")
    raw_hint = _find_hint(outside)
    if raw_hint is None:
        failure = ParseFailure.NO_HINT if require_hint else None
        return DesignParse(source, None, class_name, failure)
    hint, failure, detail = clean_hint(raw_hint, max_hint_chars)
    return DesignParse(source, hint, class_name, failure, detail)


def clean_hint(
    raw: str, max_hint_chars: int = MAX_HINT_CHARS
) -> tuple[str | None, ParseFailure | None, str]:
    """Whitespace-normalise a hint and check it: ``(hint, failure, detail)``."""
    hint = " ".join(raw.split())
    if not hint:
        return None, ParseFailure.EMPTY_HINT, ""
    if len(hint) > max_hint_chars:
        return hint, ParseFailure.HINT_TOO_LONG, f"{len(hint)} chars > {max_hint_chars}"
    return hint, None, ""


def _unfenced_code(reply: str) -> _Block | None:
    """A reply that forgot the fences: code from the first import/class line to the hint."""
    if _env_class(reply) is None:
        return None
    first = _CODE_START.search(reply)
    if first is None:
        return None
    hint = _HINT_OPEN.search(reply, first.start())
    stop = hint.start() if hint is not None else len(reply)
    return _Block(first.start(), stop, reply[first.start() : stop])


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def leading_sentences(text: str, max_chars: int, max_sentences: int = 3) -> str:
    """The first complete sentences of ``text`` (at most ``max_sentences``, ``max_chars``).

    A separate hint writer often keeps talking after its hint (or hits its token budget);
    the contract asks for one to three sentences, so the rest is dropped, not the hint.
    Returns "" when not even one complete sentence fits.
    """
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(text.split()))[:max_sentences]:
        if not sentence.endswith((".", "!", "?")):
            break
        if len(" ".join([*kept, sentence])) > max_chars:
            break
        kept.append(sentence)
    return " ".join(kept)


def parse_hint(
    text: str, *, max_hint_chars: int = MAX_HINT_CHARS, truncated: bool = False
) -> tuple[str | None, ParseFailure | None, str]:
    """The hint of a hint-writer reply: ``(hint, failure, detail)``.

    A reply without tags is taken whole (a hint writer has nothing else to say). An
    over-long or ``truncated`` (budget-cut) reply keeps its first complete sentences; it
    fails only when none fits.
    """
    reply = strip_think(text or "")
    found = _find_hint(reply)
    raw = reply if found is None else found
    hint, failure, detail = clean_hint(raw, max_hint_chars)
    if hint and (failure is ParseFailure.HINT_TOO_LONG or truncated):
        short = leading_sentences(hint, max_hint_chars)
        if short:
            return short, None, ""
        reason = "the writer hit max_new_tokens" if truncated else detail
        return hint, ParseFailure.HINT_TOO_LONG, f"{reason}; no complete sentence fits"
    return hint, failure, detail
