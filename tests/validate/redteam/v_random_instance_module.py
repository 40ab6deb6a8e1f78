"""Red-team corpus (valid): `import random` used only to build private random.Random
instances; reset with positional-or-keyword seed; a seeded helper generator."""

import random

from spade.envs import TextEnv

WORDS = ["planet", "garden", "silver", "button", "pencil", "rocket", "castle", "jungle",
         "marble", "window", "candle", "forest", "bridge", "harbor", "meadow", "violin"]


def scramble(word: str, rng: random.Random) -> str:
    letters = list(word)
    while True:
        rng.shuffle(letters)
        if "".join(letters) != word:
            return "".join(letters)


class AnagramEnv(TextEnv):
    max_turns = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._r = random.Random(seed)
        self.word = self._r.choice(WORDS)
        self.tries = 0
        return f"Unscramble this word: {scramble(self.word, self._r).upper()}", {}

    def step(self, action):
        self.tries += 1
        if action.strip().lower() == self.word:
            return "Correct!", 1.0, True, False, {}
        done = self.tries >= self.max_turns
        return "Not quite." + (" Game over." if done else " Try again."), 0.0, done, False, {}

    def solution(self):
        return [self.word]
