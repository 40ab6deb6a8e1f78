"""Red-team corpus (hostile, kernel limits): hundreds of small-stack threads that never end,
started at import. Each is a kernel task (a pid in every enclosing namespace, the host's
included), outside any memory limit; unbounded, a few workers exhaust the host's pids."""
import threading

from spade.envs import TextEnv

_GATE = threading.Event()
threading.stack_size(64 * 1024)
_STARTED = 0
for _ in range(600):
    try:
        threading.Thread(target=_GATE.wait, daemon=True).start()
    except RuntimeError:
        break
    _STARTED += 1


class SwarmEnv(TextEnv):
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
