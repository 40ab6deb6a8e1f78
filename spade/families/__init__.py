"""Agent-scale starter environment families: a bundled, versioned library of small game
environments written in the designer's output format.

Each family is one source template and a grid of parameters (``families.yaml``); every grid
point renders to a complete, distinct environment module plus its privileged hint. The
families span the difficulty a small agent meets (from nearly always solved to nearly never;
measured rates in the docs), and they are the material of the designer's warm start:
``python -m spade.families.warmstart`` renders (designer prompt -> design + hint) pairs
from them and keeps the pairs the validator accepts. Their held-out instances (reset seeds
training never draws, :mod:`spade.families._split`) are the ``families`` evaluation suite.

    for inst in all_instances(("sum_numbers",)):
        print(inst.name, inst.skill, inst.hint)
"""

from __future__ import annotations

from spade.families._registry import (
    Family,
    FamilyInstance,
    all_instances,
    families_version,
    get_family,
    list_families,
)
from spade.families._split import (
    HELDOUT_SEEDS,
    TRAINING_SEEDS,
    HeldoutPlay,
    heldout_plays,
    heldout_seed,
    is_heldout_seed,
)

__all__ = [
    "HELDOUT_SEEDS",
    "TRAINING_SEEDS",
    "Family",
    "FamilyInstance",
    "HeldoutPlay",
    "all_instances",
    "families_version",
    "get_family",
    "heldout_plays",
    "heldout_seed",
    "is_heldout_seed",
    "list_families",
]
