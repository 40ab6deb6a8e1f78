"""Red-team corpus (valid): a library-style lock file in the private tmp (flock and lockf on
the environment's own files are fine)."""
import fcntl
import os
import tempfile

from spade.envs import TextEnv


class LockedCounterEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        path = os.path.join(tempfile.gettempdir(), "counter.lock")
        with open(path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(f, fcntl.LOCK_UN)
            fcntl.flock(f, fcntl.LOCK_UN)
        self.a, self.b = self.rng.randint(10, 99), self.rng.randint(10, 99)
        return f"What is {self.a} * {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a * self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a * self.b)]
