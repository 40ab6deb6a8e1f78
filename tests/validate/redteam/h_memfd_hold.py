"""Red-team corpus (hostile): holds 640 MiB in an anonymous memfd, memory the address-space
limit does not count."""
import os

from spade.envs import TextEnv


class HoardEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.fd = os.memfd_create("hoard")
        os.ftruncate(self.fd, 640 << 20)
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", float(ok), True, False, {}

    def solution(self):
        return [str(self.n)]
