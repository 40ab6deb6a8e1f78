"""Red-team corpus (valid): a math env that uses sympy (installed with the project) to build
and check its problem; importing a library is fine."""

import sympy as sp

from spade.envs import TextEnv

x = sp.Symbol("x")


class RootSumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        r1, r2 = self.rng.sample(range(-12, 13), 2)
        self.poly = sp.expand((x - r1) * (x - r2) * self.rng.randint(1, 4))
        self.answer = sum(sp.solve(self.poly, x))
        return f"What is the sum of the roots of {sp.sstr(self.poly)} = 0?", {}

    def step(self, action):
        try:
            ok = sp.sympify(action.strip()) == self.answer
        except (sp.SympifyError, TypeError, SyntaxError):
            ok = False
        return "Correct." if ok else "Wrong.", float(bool(ok)), True, False, {}

    def solution(self):
        return [str(self.answer)]
