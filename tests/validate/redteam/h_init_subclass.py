"""Red-team corpus: (hostile) a module base class whose __init_subclass__ runs os.system"""
import os
from spade.envs import TextEnv

class Base(TextEnv):
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        try:
            os.system('id')
        except Exception:
            pass


class SumEnv(Base):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
