"""Red-team corpus (buggy): the hidden number comes from os.urandom, not from the seed; every
seed shows the same text, so only play can tell."""
import os

from spade.envs import TextEnv


class GuessEnv(TextEnv):
    max_turns = 7

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = int.from_bytes(os.urandom(2), "big") % 100 + 1
        self.left = self.max_turns
        return "Guess my number between 1 and 100; I say higher or lower.", {}

    def step(self, action):
        self.left -= 1
        try:
            guess = int(action.strip())
        except ValueError:
            return "A whole number, please.", 0.0, self.left <= 0, False, {}
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        return ("Higher." if guess < self.secret else "Lower."), 0.0, self.left <= 0, False, {}
