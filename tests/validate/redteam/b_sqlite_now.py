"""Red-team corpus (buggy): the instance depends on SQLite's date('now')."""
import sqlite3

from spade.envs import TextEnv


class SqliteDayEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        db = sqlite3.connect(":memory:")
        day = int(db.execute("SELECT julianday(date('now'))").fetchone()[0])
        db.close()
        self.a = self.rng.randint(100, 999)
        self.b = 100 + day % 900
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
