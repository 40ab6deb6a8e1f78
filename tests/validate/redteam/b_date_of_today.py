"""Red-team corpus: (buggy) the instance depends on today's date (the same on both
determinism workers unless the validator moves the second worker's clock)."""

import datetime

from spade.envs import TextEnv


class DayEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        today = datetime.date.today()
        self.a = self.rng.randint(100, 999)
        self.b = today.toordinal() % 97
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
