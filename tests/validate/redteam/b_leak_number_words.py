"""Red-team corpus (buggy): the observation spells the answer in words."""
from spade.envs import TextEnv

_ONES = "zero one two three four five six seven eight nine".split()


class SpellEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(0, 9)
        self.m = self.rng.randint(0, 9)
        self.code = 10 * self.n + self.m + 100
        words = f"one hundred {['','ten','twenty','thirty','forty','fifty','sixty','seventy','eighty','ninety'][self.n]} {_ONES[self.m] if self.m else ''}"
        return f"Type the code as digits. The code is {words.split()!r:.0}{' '.join(words.split())}.", {}

    def step(self, action):
        ok = action.strip() == str(self.code)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.code)]
