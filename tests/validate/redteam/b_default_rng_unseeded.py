"""Red-team corpus (buggy): numpy's default_rng() without a seed makes each instance random."""
import numpy as np

from spade.envs import TextEnv


class DrawEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        rng = np.random.default_rng()
        self.a, self.b = (int(x) for x in rng.integers(100, 1000, size=2))
        return f"What is {self.a} * {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
