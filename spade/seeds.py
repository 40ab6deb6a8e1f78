"""The one seed derivation of the project: every random draw names where it is used.

A seed is a pure function of (run seed, namespace, parts...): the namespace says who draws
(an eval suite id, a self-play role such as ``"designer"`` or ``"play"``) and the parts
say which draw (item, sample, turn, ...). Nothing depends on call order, batch
composition or the process (no ``hash()``), so a resumed or re-batched run draws exactly
what an uninterrupted one would have drawn, and two requests differ in seed whenever they
differ in any part.

Encoding: the parts are written as a compact JSON array
``["spade-seed", run_seed, namespace, *parts]`` (separators ``,`` and ``:``, so no part
can run into the next one, and ``1`` differs from ``"1"``), hashed with SHA-256; the seed
is the top ``bits`` bits of the first 8 digest bytes. The default width, 63 bits, is a
non-negative int64 that vLLM, OpenAI-compatible servers, ``torch.Generator`` and
``random.Random`` all accept. Use ``bits=31`` for seeds handed to code that may feed them
to ``numpy.random.seed`` (generated environments' ``reset(seed=...)``).
"""

from __future__ import annotations

import hashlib
import json

SEED_BITS = 63
_TAG = "spade-seed"


def derive_seed(run_seed: int, namespace: str, *parts: int | str, bits: int = SEED_BITS) -> int:
    """A ``bits``-wide non-negative seed for draw ``parts`` of ``namespace`` in run ``run_seed``."""
    if not 1 <= bits <= 64:
        raise ValueError(f"seed width must be 1..64 bits, not {bits}")
    for p in (run_seed, *parts):
        if isinstance(p, bool) or not isinstance(p, int | str):
            raise TypeError(f"seed parts must be int or str, not {type(p).__name__}: {p!r}")
    if not isinstance(namespace, str) or not namespace:
        raise TypeError("a seed namespace is a non-empty string")
    text = json.dumps([_TAG, run_seed, namespace, *parts], separators=(",", ":"))
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return value >> (64 - bits)
