"""Red-team corpus (valid): names its scratch files with numpy.str_ and a StrEnum, opens a
sqlite database by pathlib.Path, and resets SIGALRM with the signal module's enum."""

import enum
import pathlib
import signal
import sqlite3

import numpy as np

from spade.envs import TextEnv


class Files(enum.StrEnum):
    LEDGER = "ledger.txt"


class LedgerPathsEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        entries = [self.rng.randint(-500, 500) for _ in range(5)]
        with open(Files.LEDGER, "w") as fh:
            fh.write(" ".join(map(str, entries)))
        with open(np.str_("ledger.txt")) as fh:
            entries = [int(x) for x in fh.read().split()]
        db = sqlite3.connect(pathlib.Path("ledger.db"))
        db.execute("CREATE TABLE IF NOT EXISTS e(v)")
        db.execute("DELETE FROM e")
        db.executemany("INSERT INTO e VALUES (?)", [(e,) for e in entries])
        self.total = db.execute("SELECT sum(v) FROM e").fetchone()[0]
        db.close()
        shown = ", ".join(f"{e:+d}" for e in entries)
        return f"Ledger entries: {shown}. What is the balance?", {}

    def step(self, action):
        ok = action.strip().lstrip("+") == str(self.total)
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(self.total)]
