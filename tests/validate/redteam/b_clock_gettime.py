"""Red-team corpus (buggy): the instance depends on the day, read through
time.clock_gettime(CLOCK_REALTIME)."""
import time

from spade.envs import TextEnv


class DaySumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        day = int(time.clock_gettime(time.CLOCK_REALTIME) // 86400)
        self.a = self.rng.randint(100, 999)
        self.b = 100 + day % 900
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
