"""Red-team corpus (valid): reverse a word; the hint works one example through, quoting it."""
from spade.envs import TextEnv

_WORDS = ("lantern orchard whistle pebble harbour meadow thunder velvet saddle copper "
          "marble basket candle forest garden island jacket kettle ladder magnet").split()


class ReverseEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.word = self.rng.choice(_WORDS) + self.rng.choice(_WORDS)
        return f"Write the letters of '{self.word}' in reverse order.", {}

    def step(self, action):
        ok = action.strip() == self.word[::-1]
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [self.word[::-1]]
