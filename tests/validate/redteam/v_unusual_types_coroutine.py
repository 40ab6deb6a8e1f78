"""Red-team corpus (valid, unusual): types.coroutine and generator-based helpers."""

import re
from fractions import Fraction

from spade.envs import TextEnv
import types

NUMBER = re.compile(r"-?\d+(?:/\d+)?")

@types.coroutine
def ticker():
    yield 1


class TypesCoroutineEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        info = {}
        info['gen'] = type(ticker()).__name__
        return f"Compute {terms} and answer in lowest terms as p/q.", info

    def step(self, action):
        total = sum(self.parts, Fraction(0))
        match = NUMBER.search(action or "")
        try:
            got = Fraction(match.group(0)) if match else None
        except (ValueError, ZeroDivisionError):
            got = None
        ok = got == total
        info = {}
        pass
        return ("Correct" if ok else "Incorrect"), (1 if ok else 0), True, False, info

    def solution(self):
        total = sum(self.parts, Fraction(0))
        return [f"{total.numerator}/{total.denominator}"]
