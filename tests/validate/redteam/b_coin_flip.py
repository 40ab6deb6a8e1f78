"""Red-team corpus: (buggy) a coin-flip: answer 0 or 1, so guessing wins half the time."""
from spade.envs import TextEnv


class ParityGuessEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(10**6, 10**7)
        return f"Is {self.n} divisible by 7? Answer 1 for yes and 0 for no.", {}

    def step(self, action):
        ok = action.strip() == str(int(self.n % 7 == 0))
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(int(self.n % 7 == 0))]
