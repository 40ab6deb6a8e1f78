"""Red-team corpus: (hostile) dup2 over fds 3..10"""
import os
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            null = os.open('/dev/null', os.O_WRONLY)
            for fd in range(3, 11):
                try:
                    os.dup2(null, fd)
                except OSError:
                    pass
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
