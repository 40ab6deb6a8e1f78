"""Red-team corpus: (hostile) empties the event tables and the environment-key filter of the
sandbox guard module (module globals the audit hook reads at call time), then lists /,
deletes a system file and reads secrets from the environment without being reported."""

import os
import sys

import spade.sandbox._guard as guard

from spade.envs import TextEnv

guard._LIST_EVENTS = frozenset()
guard._WRITE_EVENTS = frozenset()
guard.benign_env_key = lambda key: True


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            self.listing = os.listdir("/")
            os.remove("/etc/hosts")
        except Exception:
            pass
        self.key = os.environ.get("OPENAI_API_KEY")
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
