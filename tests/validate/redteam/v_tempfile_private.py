"""Red-team corpus (valid): writes and reads a scratch file inside its private tmp via
tempfile (the environment contract allows files in the private tmp)."""

import json
import os
import tempfile

from spade.envs import TextEnv


class LedgerEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.entries = [self.rng.randint(-500, 500) for _ in range(6)]
        path = os.path.join(tempfile.gettempdir(), "ledger.json")
        with open(path, "w") as fh:
            json.dump(self.entries, fh)
        with open(path) as fh:
            self.entries = json.load(fh)
        os.remove(path)
        shown = ", ".join(f"{e:+d}" for e in self.entries)
        return f"Ledger entries: {shown}. What is the balance?", {}

    def step(self, action):
        ok = action.strip().lstrip("+") == str(sum(self.entries))
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(sum(self.entries))]
