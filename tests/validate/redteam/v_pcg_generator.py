"""Red-team corpus (valid): a numpy Generator built from the instance's own seed."""
import numpy as np

from spade.envs import TextEnv


class MatrixEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        gen = np.random.Generator(np.random.PCG64(self.rng.getrandbits(64)))
        self.m = gen.integers(-9, 10, size=(3, 3))
        rows = "; ".join(" ".join(str(int(v)) for v in row) for row in self.m)
        return f"Determinant of the 3x3 matrix with rows [{rows}]?", {}

    def step(self, action):
        ok = action.strip() == str(int(round(np.linalg.det(self.m))))
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(int(round(np.linalg.det(self.m))))]
