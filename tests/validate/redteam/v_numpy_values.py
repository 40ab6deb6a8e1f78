"""Red-team corpus (valid): numpy float reward, numpy bool flags, info holding numpy arrays,
sets and objects (the environment contract: converted, not rejected); randomness from self.np_random."""

import numpy as np

from spade.envs import TextEnv


class MatrixTraceEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.m = self.np_random.integers(-20, 21, size=(3, 3))
        rows = "\n".join(" ".join(f"{v:4d}" for v in row) for row in self.m)
        return f"Compute the trace of this matrix:\n{rows}", {"shape": self.m.shape}

    def step(self, action):
        try:
            ok = int(action.strip()) == int(np.trace(self.m))
        except ValueError:
            ok = False
        reward = np.float64(1.0) if ok else np.float32(0.0)
        info = {"matrix": self.m, "seen": {1, 2, 3}, "det": np.linalg.det(self.m), "obj": object()}
        return "Correct." if ok else "Wrong.", reward, np.bool_(True), np.False_, info

    def solution(self):
        return [str(int(np.trace(self.m)))]
