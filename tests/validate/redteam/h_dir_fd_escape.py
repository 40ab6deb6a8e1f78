"""Red-team corpus (hostile): escape the path checks with dir_fd and a relative path."""

import os

from spade.envs import TextEnv


class DirFdEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            base = os.open("/usr", os.O_RDONLY)
            fd = os.open("../etc/passwd", os.O_RDONLY, dir_fd=base)
            os.read(fd, 100)
        except OSError:
            pass
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
