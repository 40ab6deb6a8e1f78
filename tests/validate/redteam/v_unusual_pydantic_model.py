"""Red-team corpus (valid, unusual): a pydantic model validates the instance."""

import re
from fractions import Fraction

from spade.envs import TextEnv
import pydantic

NUMBER = re.compile(r"-?\d+(?:/\d+)?")

class Instance(pydantic.BaseModel):
    terms: str
    count: int


class PydanticModelEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        info = {}
        info['model'] = Instance(terms=terms, count=3).model_dump()
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
