"""Red-team corpus: (hostile) a deeply nested structure in info (C recursion)"""
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        self.nest = []
        for _ in range(10**5):
            self.nest = [self.nest]
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {"deep": self.nest}

    def solution(self):
        return [str(self.a + self.b)]
