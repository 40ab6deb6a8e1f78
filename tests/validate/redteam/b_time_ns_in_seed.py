"""Red-team corpus (buggy): the instance generator mixes the clock into the seed."""
import random
import time

from spade.envs import TextEnv


class MixEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        rng = random.Random((seed or 0) ^ (time.time_ns() // 10**9))
        self.a, self.b = rng.randint(100, 999), rng.randint(100, 999)
        return f"What is {self.a} * {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
