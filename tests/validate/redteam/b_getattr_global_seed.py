"""Red-team corpus: (buggy) seeds the process-wide generator through a computed name, so
the literal-name source rule cannot see it."""

import random

from spade.envs import TextEnv

NAME = "se" + "ed"
DRAW = "rand" + "int"


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        getattr(random, NAME)(seed)
        self.a = getattr(random, DRAW)(100, 999)
        self.b = getattr(random, DRAW)(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
