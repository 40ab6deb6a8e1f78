"""Red-team corpus (buggy): a random.Random() made without a seed, per instance."""
import random

from spade.envs import TextEnv


class DrawEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        rng = random.Random()
        self.a, self.b = rng.randint(100, 999), rng.randint(100, 999)
        return f"What is {self.a} * {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
