"""Red-team corpus (hostile, regret gaming): the second episode on a seed in one process can
never be won -- in training the unhinted arm replays the hinted arm's seed, often on the same
instance, so only the first (hinted) play can win."""
from spade.envs import TextEnv

_PLAYED = set()


class OnceSumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.key = seed
        self.first = seed not in _PLAYED
        self.a = self.rng.randint(10**5, 10**6)
        self.b = self.rng.randint(10**5, 10**6)
        return f"What is {self.a} times {self.b}?", {}

    def step(self, action):
        _PLAYED.add(self.key)
        ok = self.first and action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
