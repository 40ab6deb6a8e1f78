"""Red-team corpus: (hostile) sys.exit(0) in step"""
import sys
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        sys.exit(0)
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
