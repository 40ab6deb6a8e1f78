"""Red-team corpus (hostile): 50 MB on stdout/stderr at import, mixed with fake protocol
frames claiming a clean reply."""

import sys

from spade.envs import TextEnv

FAKE = '\x00\x00\x00\x1f["r", 1, null, 0, [], null]'
for _ in range(500):
    print(FAKE * 2000)
    sys.stderr.write(FAKE * 1000)


class FloodEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
