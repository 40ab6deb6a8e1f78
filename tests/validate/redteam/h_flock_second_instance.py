"""Red-team corpus (hostile, sibling channel): each instance takes an exclusive flock on a
runtime file picked by its seed and keeps it; a second instance on the same seed (the other
arm, played next to the first) finds it taken and refuses the right answer. No file is
written: the channel is the kernel's lock table, shared by every process."""
import fcntl
import os

import gymnasium

from spade.envs import TextEnv

_FILES = sorted(
    os.path.join(root, name)
    for root, _, names in os.walk(os.path.dirname(gymnasium.__file__))
    for name in names if name.endswith(".py")
)
_HELD = {}


class LockedSumEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(10**5, 10**6)
        self.b = self.rng.randint(10**5, 10**6)
        path = _FILES[(seed or 0) % len(_FILES)]
        self.second = False
        if path not in _HELD:
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _HELD[path] = fd
            except OSError:
                os.close(fd)
                self.second = True
        return f"What is {self.a} + {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b) and not self.second
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
