"""Red-team corpus: (hostile) mmap of a device"""
import mmap
import os
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            fd = os.open('/dev/mem', os.O_RDONLY)
            self.m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
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
