"""The families' seed split: held-out plays never use a seed training draws."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
from spade.train import load_recipe, plan_steps

from spade.families import (
    HELDOUT_SEEDS,
    TRAINING_SEEDS,
    heldout_plays,
    heldout_seed,
    is_heldout_seed,
    list_families,
)
from spade.seeds import derive_seed
from spade.validate._state import State


def test_the_seed_ranges_are_disjoint_and_numpy_safe() -> None:
    assert TRAINING_SEEDS.stop <= HELDOUT_SEEDS.start
    assert HELDOUT_SEEDS.stop <= 2**32  # numpy.random.seed accepts seeds below 2**32
    plays = heldout_plays(500)
    assert all(is_heldout_seed(p.seed) for p in plays)
    assert not any(is_heldout_seed(s) for s in (0, 2**31 - 1))


@pytest.mark.parametrize("recipe", ["cpu_demo", "tiny"])
def test_training_plays_never_draw_a_heldout_seed(recipe: str) -> None:
    r = load_recipe(recipe)
    tickets = plan_steps(r, r.steps)
    seeds = {t.env_seed(j) for t in tickets for j in range(t.group_size)}
    assert seeds and all(s in TRAINING_SEEDS for s in seeds)
    assert not seeds & {p.seed for p in heldout_plays(2000)}


def test_validation_and_cycle_seeds_stay_in_the_training_range() -> None:
    state = SimpleNamespace(base_seed=123)
    drawn = [State.seed(state, stream, k)  # type: ignore[arg-type]
             for stream in ("probe", "hint", "leak") for k in range(200)]
    # the designer cycle's matched plays and validation seeds, as spade.cycle derives them
    drawn += [derive_seed(7, ns, 3, k, i, bits=31) for ns in ("play", "validate")
              for k in range(20) for i in range(10)]
    assert all(s in TRAINING_SEEDS and not is_heldout_seed(s) for s in drawn)


def test_heldout_plays_take_the_families_in_turn() -> None:
    families = list_families()
    plays = heldout_plays(len(families) * 4)
    per_family = Counter(p.instance.family for p in plays)
    assert set(per_family.values()) == {4}
    assert [p.instance.family for p in plays[:len(families)]] == [f.name for f in families]
    assert len({p.id for p in heldout_plays(1000)}) == 1000  # (module, seed) distinct
    assert heldout_plays(10) == heldout_plays(20)[:10]  # a prefix is a smaller slice
    one = heldout_plays(5, ("letter_at",))
    assert {p.instance.family for p in one} == {"letter_at"}
    assert heldout_seed("letter_at/0", 0) == heldout_seed("letter_at/0", 0)
    assert heldout_seed("letter_at/0", 0) != heldout_seed("letter_at/0", 1)
