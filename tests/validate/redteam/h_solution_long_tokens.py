"""Red-team corpus (hostile, parent load): an observation at the size limit made of one
repeated token and a solution() of long actions of the same token, so that every leak rule
the parent derives matches everywhere; the parent's own work must stay bounded."""
from spade.envs import TextEnv


class EchoWallEnv(TextEnv):
    max_turns = 100

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.k = self.rng.randint(1, 9)
        return ("7 " * 8000).strip() + f" k{self.k}", {}

    def step(self, action):
        ok = action.strip() == ("7 " * 4000).strip() + f" {self.k}"
        return "no", float(ok), ok, False, {}

    def solution(self):
        return [("7 " * 4000).strip() + f" {self.k}"] * 1
