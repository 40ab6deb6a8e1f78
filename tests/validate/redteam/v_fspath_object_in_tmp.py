"""Red-team corpus (valid): files in the private tmp opened through an object that only
implements os.PathLike, and through a bytes path."""
import os
import tempfile

from spade.envs import TextEnv


class Where(os.PathLike):
    def __init__(self, name):
        self.name = name

    def __fspath__(self):
        return os.path.join(tempfile.gettempdir(), self.name)


class LedgerEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.values = [self.rng.randint(1, 999) for _ in range(5)]
        with open(Where("ledger.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(map(str, self.values)))
        with open(os.fsencode(os.fspath(Where("ledger.txt"))), "rb") as f:
            stored = [int(x) for x in f.read().split()]
        self.total = sum(stored)
        return f"Add up: {', '.join(map(str, self.values))}.", {}

    def step(self, action):
        ok = action.strip() == str(self.total)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.total)]
