"""Red-team corpus (buggy): instances come from a table indexed by the seed, and seeds past
the table's end (most of training's 31-bit range) fall back to a numpy generator made
without a seed."""
import numpy as np

from spade.envs import TextEnv

TABLE = [(3, 4), (12, 30), (7, 9), (100, 250), (21, 2)] * 200


class TableEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None and seed < len(TABLE):
            self.a, self.b = TABLE[seed]
        else:
            fallback = np.random.default_rng()
            self.a, self.b = (int(x) for x in fallback.integers(1, 999, size=2))
        return f"What is {self.a} * {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
