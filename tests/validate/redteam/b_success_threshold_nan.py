"""Red-team corpus (buggy): success_threshold is NaN, so no episode can ever count as won."""
from spade.envs import TextEnv


class NanEnv(TextEnv):
    max_turns = 2
    success_threshold = float("nan")

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
