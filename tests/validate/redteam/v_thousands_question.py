"""Red-team corpus (valid): numbers written with thousands separators in the question; the
answer (their difference) is nowhere in it."""
from spade.envs import TextEnv


class GapEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(10_000, 900_000)
        self.b = self.rng.randint(10_000, 900_000)
        return f"Warehouse A holds {self.a:,} crates and B holds {self.b:,}. How many more " \
               "crates does the fuller one hold?", {}

    def step(self, action):
        ok = action.strip().replace(",", "") == str(abs(self.a - self.b))
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(abs(self.a - self.b))]
