"""Red-team corpus (valid): the hint names a method ('casting out nines') and a word the
player must never type alone; none of its words wins an instance."""
from spade.envs import TextEnv


class DigitRootEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(10**8, 10**9)
        return f"What is the digital root of {self.n}?", {}

    def step(self, action):
        ok = action.strip() == str(1 + (self.n - 1) % 9)
        return ("Correct." if ok else "Wrong."), float(ok), ok, False, {}

    def solution(self):
        return [str(1 + (self.n - 1) % 9)]
