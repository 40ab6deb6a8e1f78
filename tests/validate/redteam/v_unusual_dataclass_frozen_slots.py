"""Red-team corpus (valid, unusual): frozen, slotted, ordered dataclasses with field factories."""

import re
from fractions import Fraction

from spade.envs import TextEnv
from dataclasses import dataclass, field, asdict

NUMBER = re.compile(r"-?\d+(?:/\d+)?")

@dataclass(frozen=True, slots=True, order=True)
class Term:
    p: int
    q: int
    tags: tuple = field(default_factory=tuple)


class DataclassFrozenSlotsEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        info = {}
        info['terms'] = [asdict(Term(p.numerator, p.denominator)) for p in self.parts]
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
