"""The look-alikes the hint audit plays beside a string that wins some instances."""

from __future__ import annotations

import random

from spade.validate._hint_audit import screen_seeds
from spade.validate._hint_strings import neighbours, same_shape


def test_random_look_alikes_keep_the_shape_and_are_not_neighbours() -> None:
    rng = random.Random(3)
    drawn = [same_shape("Sword-fish42", rng) for _ in range(50)]
    for text in drawn:
        assert len(text) == 12 and text[5] == "-"
        assert text[0].isupper() and text[1:5].islower() and text[10:].isdigit()
    assert len(set(drawn)) == 50
    # an environment that accepts the string's neighbours too cannot know these
    near = set(neighbours("Sword-fish42"))
    assert near == {"Sword-fish43", "Sword-fish41"} and not near & set(drawn)


def test_few_plain_candidates_are_screened_on_more_seeds() -> None:
    assert screen_seeds(400, 50, 1) == 4  # half the budget over 50 one-step plays, at most 4
    assert screen_seeds(400, 40, 2) == 2  # 200 steps over 40 two-step plays
    assert screen_seeds(400, 72, 2) == 2  # at least 2
