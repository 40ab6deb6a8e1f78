"""Red-team corpus: (hostile) raises the recursion limit and recurses through C code (comparing two deep lists)"""
import sys
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        sys.setrecursionlimit(10**7)
        a, b = [], []
        for _ in range(1_000_000):
            a, b = [a], [b]
        self.r = a == b
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
