"""The seed split of the families: held-out plays use reset seeds training never draws.

Every environment seed training draws is a 31-bit :func:`spade.seeds.derive_seed`, in
``[0, 2**31)``: the agent tickets' plays, the validator's probes, the designer cycle's
matched plays, the fixed-environment baselines' problems and the measurement script. The
held-out instances of a family module are its resets with a seed in ``[2**31, 2**32)``:
still a seed ``numpy.random.seed`` and gymnasium accept, and never equal to a training
seed. A held-out instance is (module, seed); which modules and in which order is
:func:`heldout_plays`: the families in turn, so every prefix of the list covers them
evenly.

What the split does not promise: a family with a small problem space (two one-digit
addends) can draw the same question under a held-out seed as under a training seed. The
seeds are disjoint; the questions are fresh draws from the same distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

from spade.families._registry import FamilyInstance, get_family, list_families
from spade.seeds import derive_seed

__all__ = ["HELDOUT_SEEDS", "TRAINING_SEEDS", "HeldoutPlay", "heldout_plays",
           "heldout_seed", "is_heldout_seed"]

#: Reset seeds training draws (31-bit derived seeds).
TRAINING_SEEDS = range(0, 2**31)
#: Reset seeds of held-out plays (disjoint from ``TRAINING_SEEDS``; below numpy's 2**32).
HELDOUT_SEEDS = range(2**31, 2**32)
_NAMESPACE = "families-heldout"


def heldout_seed(module: str, k: int) -> int:
    """The ``k``-th held-out reset seed of ``module`` (``<family>/<index>``)."""
    return HELDOUT_SEEDS.start + derive_seed(0, _NAMESPACE, module, k, bits=31)


def is_heldout_seed(seed: int) -> bool:
    return seed in HELDOUT_SEEDS


@dataclass(frozen=True)
class HeldoutPlay:
    """One held-out instance: a family module and a held-out reset seed."""

    instance: FamilyInstance
    seed: int

    @property
    def id(self) -> str:
        return f"{self.instance.name}@{self.seed}"


def heldout_plays(count: int, names: tuple[str, ...] = ()) -> list[HeldoutPlay]:
    """``count`` held-out instances of the named families (all when empty): the families in
    turn, each cycling through its modules in grid order, each module's seeds in order."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    families = [get_family(n) for n in names] if names else list_families()
    modules = [f.instances() for f in families]
    out: list[HeldoutPlay] = []
    i = 0
    while len(out) < count:
        mods = modules[i % len(modules)]
        turn = i // len(modules)
        inst = mods[turn % len(mods)]
        out.append(HeldoutPlay(inst, heldout_seed(inst.name, turn // len(mods))))
        i += 1
    return out
