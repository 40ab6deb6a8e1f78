"""Red-team corpus (buggy): the observation carries a lone surrogate, which no tokenizer can
encode (the training run would stop at the first prompt)."""
from spade.envs import TextEnv


class GlyphEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? \ud83d", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
