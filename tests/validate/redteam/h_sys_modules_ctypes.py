"""Red-team corpus: (hostile) ctypes taken from a module that already imported it (numpy internals)"""
import sys
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            ct = sys.modules['numpy._core._internal'].ctypes
            self.x = ct.string_at(id(self), 8)
        except Exception:
            pass
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
