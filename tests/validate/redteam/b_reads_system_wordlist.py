"""Red-team corpus: (rule check) loads a word list from /usr/share/dict/words with a fallback.
The environment contract forbids opening files outside the private tmp, so this is invalid (safety)."""

from spade.envs import TextEnv

FALLBACK = ["apple", "banana", "cherry", "damson", "elder", "feijoa", "guava", "huckle"]


def load_words():
    try:
        with open("/usr/share/dict/words") as fh:
            return [w.strip() for w in fh if w.strip().isalpha()][:5000]
    except OSError:
        return FALLBACK


class ReverseEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.word = self.rng.choice(load_words()).lower()
        return f"Spell '{self.word}' backwards.", {}

    def step(self, action):
        ok = action.strip().lower() == self.word[::-1]
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.word[::-1]]
