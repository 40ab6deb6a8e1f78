"""Red-team corpus (hostile): takes the raw ``memfd_create`` out of the sandbox wrapper's
closure (so the audit hook never sees the call) to hold memory outside the address-space
limit; the kernel refuses the call and the verdict names it."""

import os

from spade.envs import TextEnv


class HoardEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        for cell in getattr(os.memfd_create, "__closure__", None) or ():
            raw = cell.cell_contents
            if getattr(raw, "__name__", "") == "memfd_create":
                try:
                    os.ftruncate(raw("hoard", 1), 640 << 20)
                except OSError:
                    pass
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
