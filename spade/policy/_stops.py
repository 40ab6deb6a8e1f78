"""Stop-string handling shared by the backends.

Convention (the same as vLLM's default): the returned text ends just before the stop string,
while the token ids run through the token that completed it, because those are the tokens
that were actually sampled and a trainer must see exactly them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def first_stop(text: str, stops: Sequence[str]) -> tuple[int, int] | None:
    """(start, end) of the earliest stop string in ``text``, or None."""
    best: tuple[int, int] | None = None
    for stop in stops:
        if not stop:
            continue
        at = text.find(stop)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, at + len(stop))
    return best


def stop_prefix_length(
    token_ids: Sequence[int], stops: Sequence[str], decode: Callable[[Sequence[int]], str]
) -> int | None:
    """Fewest leading tokens whose decoded text contains a stop string, or None.

    Binary search: containing a stop string is monotone in the prefix length.
    """
    if not stops or first_stop(decode(token_ids), stops) is None:
        return None
    lo, hi = 1, len(token_ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if first_stop(decode(token_ids[:mid]), stops) is not None:
            hi = mid
        else:
            lo = mid + 1
    return lo
