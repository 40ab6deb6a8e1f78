"""A step's metrics count the valid designs that merely copy the warm start's material."""

from __future__ import annotations

from spade.train._metrics import _starter_near_copies

from spade.families import all_instances


def test_a_starter_module_with_new_numbers_and_names_is_a_near_copy() -> None:
    starter = all_instances(("walk_line",))[0].source
    edited = starter.replace("SpatialEnv", "RoverEnv").replace("0, 10", "3, 17")
    assert edited != starter
    assert _starter_near_copies([starter, edited]) == 2


def test_a_module_of_its_own_is_not_a_near_copy() -> None:
    own = '''from spade.envs import TextEnv


class ParityEnv(TextEnv):
    """Say whether the count of vowels in a word is even."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.word = "".join(self.rng.choice("abcdeiou") for _ in range(7))
        self.answer = "even" if sum(c in "aeiou" for c in self.word) % 2 == 0 else "odd"
        return f"Is the number of vowels in {self.word} even or odd?", {}

    def step(self, action):
        won = action.strip().lower() == self.answer
        return ("Right." if won else "Wrong."), float(won), True, False, {}
'''
    assert _starter_near_copies([own]) == 0
    assert _starter_near_copies([]) == 0
