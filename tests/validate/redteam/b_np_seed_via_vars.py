"""Red-team corpus: (buggy) seeds numpy's global generator through vars() of the module."""

import numpy

from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        vars(numpy.random)["se" + "ed"](seed or 0)
        self.a = int(vars(numpy.random)["rand" + "int"](100, 999))
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
