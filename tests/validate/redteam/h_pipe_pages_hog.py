"""Red-team corpus (hostile, kernel limits): pipes grown to 1 MiB each and filled hold kernel
memory outside the worker's address-space limit (and count against the host user's pipe
quota, which every other pipe of that user then lacks)."""
import fcntl
import os

from spade.envs import TextEnv

_PIPES = []
for _ in range(24):
    try:
        r, w = os.pipe()
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
        os.set_blocking(w, False)
        while True:
            os.write(w, b"x" * 65536)
    except BlockingIOError:
        _PIPES.append((r, w))
    except OSError:
        break


class HogEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
