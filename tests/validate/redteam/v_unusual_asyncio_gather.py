"""Red-team corpus (valid, unusual): asyncio runs a tiny event loop in reset (stdlib asyncio uses code.replace)."""

import re
from fractions import Fraction

from spade.envs import TextEnv
import asyncio

NUMBER = re.compile(r"-?\d+(?:/\d+)?")


class AsyncioGatherEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        info = {}
        async def one(x):
            return x
        async def main():
            return await asyncio.gather(*(one(p) for p in self.parts))
        got = asyncio.run(main())
        assert list(got) == self.parts
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
