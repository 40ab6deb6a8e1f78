"""Red-team corpus (hostile, protocol): faulthandler writes a traceback straight into every
open descriptor, the worker's control pipes included, from C, without any Python write."""
import faulthandler

from spade.envs import TextEnv


class DumpEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        for fd in range(3, 40):
            try:
                faulthandler.dump_traceback(file=fd, all_threads=False)
            except (OSError, ValueError):
                pass
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
