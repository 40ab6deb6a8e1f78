"""Red-team corpus (hostile): replaces the signal trampoline in the closure of the
sandbox's signal.signal wrapper, so its handlers could run on top of the audit hook."""
import signal

from spade.envs import TextEnv


class CellEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        for cell in signal.signal.__closure__ or ():
            if getattr(cell.cell_contents, "__name__", "") == "trampoline":
                cell.cell_contents = lambda sig, frame: None
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", float(ok), True, False, {}

    def solution(self):
        return [str(self.n)]
