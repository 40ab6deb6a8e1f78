"""Red-team corpus (valid): a modular-arithmetic task whose hint explains the method with a
worked example full of numbers and words -- none of them is an answer."""
from spade.envs import TextEnv


class ModMulEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(10**4, 10**5)
        self.b = self.rng.randint(10**4, 10**5)
        self.c = self.rng.randint(97, 9973)
        return f"Compute ({self.a} * {self.b}) mod {self.c}.", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b % self.c)
        return ("Correct." if ok else "Wrong."), float(ok), ok, False, {}

    def solution(self):
        return [str(self.a * self.b % self.c)]
