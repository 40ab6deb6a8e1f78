"""Red-team corpus (valid, unusual): rich renders a table to text (no terminal)."""

import re
from fractions import Fraction

from spade.envs import TextEnv
import io
from rich.console import Console
from rich.table import Table

NUMBER = re.compile(r"-?\d+(?:/\d+)?")


class RichRenderEnv(TextEnv):
    """Add three fractions and give the result in lowest terms as p/q."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.parts = [Fraction(self.rng.randint(1, 9), self.rng.randint(2, 12)) for _ in range(3)]
        terms = " + ".join(f"{p.numerator}/{p.denominator}" for p in self.parts)
        info = {}
        table = Table('n', 'd')
        for p in self.parts:
            table.add_row(str(p.numerator), str(p.denominator))
        buf = io.StringIO()
        Console(file=buf, width=40, color_system=None).print(table)
        info['table'] = buf.getvalue()[:200]
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
