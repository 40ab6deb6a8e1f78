"""Red-team corpus (valid): SQLite through a file: URI in the private tmp."""
import os
import sqlite3
import tempfile

from spade.envs import TextEnv


class StockEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        path = os.path.join(tempfile.gettempdir(), "stock.db")
        with sqlite3.connect(f"file:{path}?mode=rwc", uri=True) as db:
            db.execute("DROP TABLE IF EXISTS items")
            db.execute("CREATE TABLE items (name TEXT, qty INTEGER)")
            rows = [(f"item{i}", self.rng.randint(1, 50)) for i in range(6)]
            db.executemany("INSERT INTO items VALUES (?, ?)", rows)
            (self.total,) = db.execute("SELECT SUM(qty) FROM items WHERE qty > 10").fetchone()
        db.close()
        self.total = self.total or 0
        listing = "; ".join(f"{n}: {q}" for n, q in rows)
        return f"Stock: {listing}. How many units are in lines holding more than 10?", {}

    def step(self, action):
        ok = action.strip() == str(self.total)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.total)]
