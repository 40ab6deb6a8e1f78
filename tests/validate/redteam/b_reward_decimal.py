"""Red-team corpus (buggy): rewards are decimal.Decimal, not a real number type."""
from decimal import Decimal

from spade.envs import TextEnv


class DecEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), Decimal(int(ok)), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
