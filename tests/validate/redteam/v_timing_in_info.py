"""Red-team corpus (valid): times its own steps and reports the durations in ``info``
(never in observations or rewards), and uses ``time.monotonic`` deadlines inside one call
for a bounded search that always finishes."""
import time

from spade.envs import TextEnv


class TimedDivisorEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.started = time.monotonic()
        self.n = self.rng.randint(10**4, 10**5) * 2 + 1
        deadline = time.monotonic() + 5.0
        self.divisors = [d for d in range(1, self.n + 1)
                         if self.n % d == 0 and time.monotonic() < deadline]
        return f"How many positive divisors does {self.n} have?", {"t": time.perf_counter()}

    def step(self, action):
        ok = action.strip() == str(len(self.divisors))
        info = {"elapsed_s": time.monotonic() - self.started, "at": time.time()}
        return ("Correct." if ok else "Not quite."), float(ok), ok, False, info

    def solution(self):
        return [str(len(self.divisors))]
