"""Red-team corpus (hostile, parent load): an info dict nested 50,000 levels deep."""
from spade.envs import TextEnv


def _deep(n):
    value = {}
    for _ in range(n):
        value = {"x": value}
    return value


class DeepInfoEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {"tree": _deep(50_000)}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
