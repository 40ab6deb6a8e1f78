"""Red-team corpus (valid): two-digit sums; the hint works an example with its own numbers."""
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a, self.b = self.rng.randint(100, 999), self.rng.randint(100, 999)
        self.tries = 0
        return f"What is {self.a} + {self.b}?", {}

    def step(self, action):
        self.tries += 1
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), ok or self.tries >= 2, False, {}

    def solution(self):
        return [str(self.a + self.b)]
