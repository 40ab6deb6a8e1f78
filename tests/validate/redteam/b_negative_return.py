"""Red-team corpus: (buggy) wrong answers are punished with -1 (return below 0)"""
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), (1.0 if ok else -1.0), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
