"""Red-team corpus (valid, unusual): reads the clock only to time itself and to stamp
info; the instance does not depend on it."""

import datetime
import time

from spade.envs import TextEnv


class TimedEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        started = time.perf_counter()
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        self.elapsed = time.perf_counter() - started
        self.stamp = datetime.datetime.now().isoformat()
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        took = time.time() - time.time()
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {"took": took <= 0}

    def solution(self):
        return [str(self.a + self.b)]
