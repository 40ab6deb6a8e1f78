"""Red-team corpus (hostile): a thread that keeps burning CPU after step returns."""

import threading

from spade.envs import TextEnv


def burn():
    while True:
        pass


class BurnEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        threading.Thread(target=burn, daemon=True).start()
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
