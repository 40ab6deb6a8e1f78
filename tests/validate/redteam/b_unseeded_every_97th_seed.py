"""Red-team corpus (buggy): seeds divisible by 97 fall back to an unseeded generator, so
about one instance in a hundred is random (the kind of bug a seed table with a fallback
or a special case has). Caught only when such a seed is reset twice."""
import random

from spade.envs import TextEnv


class SometimesRandomEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        rng = random.Random() if seed is not None and seed % 97 == 0 else self.rng
        self.a, self.b = rng.randint(100, 999), rng.randint(100, 999)
        return f"What is {self.a} + {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
