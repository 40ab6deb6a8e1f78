"""Red-team corpus (valid): a one-shot number puzzle whose answer is a number, parsed
forgivingly (int(float(...)) inside try/except), plus fractions/re/string usage."""

import re
import string
from fractions import Fraction

from spade.envs import TextEnv

NUMBER = re.compile(r"-?\d+(?:/\d+)?")


class FractionSumEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        self.label = self.rng.choice(string.ascii_uppercase)
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        return f"Puzzle {self.label}: compute {terms} and answer in lowest terms as p/q.", {}

    def step(self, action):
        total = sum(self.parts, Fraction(0))
        match = NUMBER.search(action or "")
        try:
            got = Fraction(match.group(0)) if match else None
        except (ValueError, ZeroDivisionError):
            got = None
        ok = got == total
        return ("Correct" if ok else f"Incorrect"), (1 if ok else 0), True, False, {}

    def solution(self):
        total = sum(self.parts, Fraction(0))
        return [f"{total.numerator}/{total.denominator}"]
