"""Red-team corpus (valid): time-zone arithmetic with zoneinfo (reads the system tz database,
which is library data) and a NamedTemporaryFile scratch file in the private tmp."""

import datetime as dt
import tempfile
from zoneinfo import ZoneInfo

from spade.envs import TextEnv

ZONES = ["Europe/Paris", "Asia/Tokyo", "America/New_York", "Australia/Sydney", "Africa/Lagos"]


class TimeZoneEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        src, dst = self.rng.sample(ZONES, 2)
        start = dt.datetime(2023, 1, 1, tzinfo=ZoneInfo(src)) + dt.timedelta(
            hours=self.rng.randint(0, 24 * 364))
        self.answer = start.astimezone(ZoneInfo(dst)).strftime("%H:%M")
        with tempfile.NamedTemporaryFile("w+", suffix=".txt") as fh:
            fh.write(self.answer)
            fh.seek(0)
            assert fh.read() == self.answer
        return (f"It is {start:%Y-%m-%d %H:%M} in {src}. What time (HH:MM, 24h) is it in "
                f"{dst}?"), {}

    def step(self, action):
        ok = action.strip() == self.answer
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.answer]
