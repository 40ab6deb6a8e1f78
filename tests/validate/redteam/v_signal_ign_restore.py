"""Red-team corpus (valid): a SIGALRM guard set with SIG_IGN, then the previous handler put
back from getsignal (an enum), with alarm(0) disarming it."""
import signal

from spade.envs import TextEnv


class GuardedEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        previous = signal.getsignal(signal.SIGALRM)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        self.n = self.rng.randint(2, 40)
        return f"What is {self.n} factorial modulo 1009?", {}

    def step(self, action):
        value = 1
        for k in range(2, self.n + 1):
            value = value * k % 1009
        ok = action.strip() == str(value)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        value = 1
        for k in range(2, self.n + 1):
            value = value * k % 1009
        return [str(value)]
