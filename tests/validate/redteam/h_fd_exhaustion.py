"""Red-team corpus (hostile): open file descriptors until the limit and keep them."""

from spade.envs import TextEnv


class FdEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.handles = []
        while True:
            try:
                self.handles.append(open("/dev/null"))
            except OSError:
                break
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
