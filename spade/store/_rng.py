"""JSON-serialisable states of ``random.Random`` and numpy ``Generator`` instances.

The run store keeps these so that a resumed run draws exactly the numbers an uninterrupted
run would have drawn (no global RNG is ever used).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from spade.errors import UserError


def random_state(rng: random.Random) -> dict[str, Any]:
    """State of a ``random.Random`` as plain JSON (ints and lists)."""
    version, internal, gauss = rng.getstate()
    return {"kind": "random", "version": version, "internal": list(internal), "gauss": gauss}


def restore_random(state: dict[str, Any]) -> random.Random:
    """A ``random.Random`` continuing from :func:`random_state`."""
    try:
        if state["kind"] != "random":
            raise KeyError("kind")
        rng = random.Random()
        rng.setstate((state["version"], tuple(state["internal"]), state["gauss"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"corrupt random state in the run store ({exc})") from None
    return rng


def numpy_state(gen: np.random.Generator) -> dict[str, Any]:
    """State of a numpy ``Generator`` (its bit generator's state dict, tagged)."""
    return {"kind": "numpy", "state": gen.bit_generator.state}


def restore_numpy(state: dict[str, Any]) -> np.random.Generator:
    """A numpy ``Generator`` continuing from :func:`numpy_state`."""
    try:
        inner = state["state"]
        bit_generator = getattr(np.random, inner["bit_generator"])()
        bit_generator.state = inner
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"corrupt numpy random state in the run store ({exc})") from None
    return np.random.Generator(bit_generator)
