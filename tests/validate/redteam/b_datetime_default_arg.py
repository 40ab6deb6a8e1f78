"""Red-team corpus (buggy): the instance depends on the date, read through a
datetime.now bound as a default argument when the module was imported."""
from datetime import datetime

from spade.envs import TextEnv


def day_of_year(now=datetime.now):
    return now().timetuple().tm_yday


class YearDayEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = 100 + day_of_year()
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
