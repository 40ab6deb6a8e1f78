"""Red-team corpus (valid): deterministic datetime/calendar arithmetic (no clock reads)."""

import calendar
import datetime as dt

from spade.envs import TextEnv


class WeekdayEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        start = dt.date(2000, 1, 1)
        self.day = start + dt.timedelta(days=self.rng.randint(0, 20000))
        return (f"On which weekday did {self.day.isoformat()} fall? Answer with the English "
                "weekday name."), {}

    def step(self, action):
        ok = action.strip().lower() == calendar.day_name[self.day.weekday()].lower()
        return "Right." if ok else "No.", float(ok), True, False, {}

    def solution(self):
        return [calendar.day_name[self.day.weekday()]]
