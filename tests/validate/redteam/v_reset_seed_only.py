"""Red-team corpus (valid): `reset(self, seed=None)` without an options parameter. The environment contract:
"reset is called by keyword (reset(seed=...))", so the checker must not pass options."""

from spade.envs import TextEnv


class ParityEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None):
        super().reset(seed=seed)
        self.nums = [self.rng.randint(1000, 99999) for _ in range(5)]
        return f"Multiply {self.nums} and give the last two digits of the product.", {}

    def step(self, action):
        prod = 1
        for n in self.nums:
            prod *= n
        ok = action.strip().zfill(2) == f"{prod % 100:02d}"
        return "ok", float(ok), True, False, {}

    def solution(self):
        prod = 1
        for n in self.nums:
            prod *= n
        return [f"{prod % 100:02d}"]
