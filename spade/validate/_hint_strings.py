"""The strings a hint spells out: what the hint audit types and the regret guard looks for
(and the look-alikes the audit plays beside a string that wins some instances).

A hint that carries a password rarely prints it plainly. Every string it spells out is
collected: quoted strings, numbers, code-like and longer words first, then decodings
(base64, hex), digits spelled in words, acrostics, simple arithmetic of its first two
numbers, reversals, ROT13, and neighbouring words or quoted strings joined.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import itertools
import random
import re

from spade.validate._leaks import tokens

#: At most this many plain strings, strings per other way of spelling, and in all.
_PLAIN = 12
_PER_KIND = 8
_MAX_CANDIDATES = 72
_STOP_WORDS = ("the a an and or of to in on at is are be it its this that with for from by "
               "as not no you your try think about")  # fmt: skip
_STOP = frozenset(_STOP_WORDS.split())
_QUOTED = re.compile(r"[\"'“‘`]([^\"'”’`]{1,80})[\"'”’`]")
_EDGES = "\"'`“”‘’.,;:!?()[]{}<>"
_B64 = re.compile(r"^[A-Za-z0-9+/_-]{4,}={0,2}$")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2}){2,}$")


def _printable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return text if 0 < len(text) <= 80 and text.isprintable() else None


def _decoded(chunk: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if _B64.match(chunk):
        padded = chunk + "=" * (-len(chunk) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                text = _printable(decode(padded))
            except (binascii.Error, ValueError):
                continue
            if text:
                found.append((text, "base64"))
                break
    if _HEX.match(chunk):
        text = _printable(bytes.fromhex(chunk))
        if text:
            found.append((text, "hex"))
    if len(chunk) >= 3:
        found.append((chunk[::-1], "reversed"))
        if any(c.isalpha() for c in chunk):
            found.append((codecs.encode(chunk, "rot13"), "rot13"))
    return found


def _numbers(hint: str) -> list[int]:
    found: list[int] = []
    for token in tokens(hint):
        if token.lstrip("-").isdigit() and len(token) <= 12:
            found.append(int(token))
    return list(dict.fromkeys(found))[:2]


def _arithmetic(numbers: list[int]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for n in numbers:
        out += [(str(n + 1), "arithmetic"), (str(n - 1), "arithmetic"),
                (str(2 * n), "arithmetic"), (str(abs(n))[::-1].lstrip("0") or "0", "reversed")]
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            out += [(str(a + b), "arithmetic"), (str(a - b), "arithmetic"),
                    (str(b - a), "arithmetic"), (str(a * b), "arithmetic")]
    return out


_DIGIT_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])}
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCES = re.compile(r"[.!?;:\n]+")


def _spelled(hint: str) -> list[tuple[str, str]]:
    """Acrostics (first letters of a sentence's words or of the hint's capitalised words),
    neighbouring words joined, and numbers spelled digit by digit in words."""
    out: list[tuple[str, str]] = []
    for part in [hint, *_SENTENCES.split(hint)]:
        letters = [w[0] for w in _WORDS.findall(part) if w[0].isalpha()]
        if len(letters) >= 3:
            out.append(("".join(letters).lower(), "acrostic"))
    capitals = [w[0] for w in _WORDS.findall(hint) if w[0].isupper()]
    if len(capitals) >= 3:
        out.append(("".join(capitals).lower(), "acrostic"))
    words = _WORDS.findall(hint)
    digits: list[str] = []
    for word in [*words, ""]:
        if word.lower() in _DIGIT_WORDS:
            digits.append(_DIGIT_WORDS[word.lower()])
            continue
        if len(digits) >= 2:
            out.append(("".join(digits), "spelled digits"))
        digits = []
    quoted = [m.strip() for m in _QUOTED.findall(hint)]
    for seq in (quoted, [w for w in words if w.lower() not in _STOP]):
        for a, b in itertools.pairwise(seq):
            if len(a) + len(b) <= 80:
                out.append((a + b, "joined"))
    return out


def _unusual(chunk: str) -> tuple[bool, int]:
    """Code-like strings first (digits, inner capitals, symbols), then longer ones."""
    plain_word = chunk.isalpha() and (chunk.islower() or chunk.istitle())
    return plain_word, -len(chunk)


def candidates(hint: str) -> list[tuple[str, str]]:
    """``(string, how it is spelled out)`` of every string worth typing, plain ones first."""
    chunks = [c.strip(_EDGES) for c in hint.split()]
    chunks = [c for c in chunks if c and len(c) <= 80]
    plain = [m.strip() for m in _QUOTED.findall(hint)]
    plain += [t for t in tokens(hint) if t.lstrip("-").isdigit()]
    plain += sorted((c for c in chunks if c.lower() not in _STOP), key=_unusual)
    plain = list(dict.fromkeys(p for p in plain if p))[:_PLAIN]
    # longer strings first: a code word is more often long than a common word is
    sources = sorted(dict.fromkeys([*plain, *chunks]), key=lambda c: -len(c))
    decoded = [d for c in sources for d in _decoded(c)]
    decoded += _spelled(hint)
    ways = ("base64", "hex", "spelled digits", "acrostic", "reversed", "rot13", "joined")
    kinds = {how: [d for d in decoded if d[1] == how][:_PER_KIND] for how in ways}
    found = [(p, "plain") for p in plain] + [d for how in ways[:4] for d in kinds[how]]
    found += _arithmetic(_numbers(hint)) + [d for how in ways[4:] for d in kinds[how]]
    seen: set[str] = set()
    out = []
    for text, how in found:
        if text and text not in seen:
            seen.add(text)
            out.append((text, how))
    return out[:_MAX_CANDIDATES]


def neighbours(text: str) -> list[str]:
    """``text`` with its last letter or digit one step up and one step down (wrapping):
    strings of the same shape that a password is not, while a small answer space (an
    option letter, a die's face) holds them as often as the string itself."""
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch.isascii() and ch.isdigit():
            alts = [str((int(ch) + d) % 10) for d in (1, -1)]
        elif ch.isascii() and ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            alts = [chr(base + (ord(ch) - base + d) % 26) for d in (1, -1)]
        else:
            continue
        return [text[:i] + alt + text[i + 1:] for alt in alts]
    return []


def same_shape(text: str, rng: random.Random) -> str:
    """``text`` with every ASCII letter and digit replaced by a random one of its kind
    (case kept): a string of the password's shape that no hint names, so an environment
    that accepts the password's near neighbours too still tells it apart."""
    out = []
    for ch in text:
        if ch.isascii() and ch.isdigit():
            ch = str(rng.randrange(10))
        elif ch.isascii() and ch.isalpha():
            ch = chr((ord("a") if ch.islower() else ord("A")) + rng.randrange(26))
        out.append(ch)
    return "".join(out)
