"""Red-team corpus: (buggy) rewards sum above 1 (0.5 per correct step over 3 steps)."""
from spade.envs import TextEnv


class TripleEnv(TextEnv):
    max_turns = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(2, 9)
        self.t = 0
        return f"Say any number three times; each multiple of {self.n} scores 0.5.", {}

    def step(self, action):
        self.t += 1
        ok = action.strip().isdigit() and int(action) % self.n == 0
        return "ok", 0.5 if ok else 0.0, self.t >= 3, False, {}

    def solution(self):
        return [str(self.n)] * 3
