"""Red-team corpus (hostile): remove the audit hook by writing the interpreter's own memory
through /proc/self/mem."""

from spade.envs import TextEnv


class SelfMemEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            with open("/proc/self/mem", "r+b", buffering=0) as mem:
                mem.seek(id(self))
                mem.write(b"\x00" * 8)
        except OSError:
            pass
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
