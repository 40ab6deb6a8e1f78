"""Red-team corpus (buggy): the observation shows the answer with a thousands separator
("12,345") while the answer is typed without one."""
from spade.envs import TextEnv


class LedgerEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(1000, 40000)
        self.b = self.rng.randint(1000, 40000)
        total = self.a + self.b
        return (f"Ledger: income {self.a}, costs {self.b}. Balance {total:,} (check it). "
                "What is the sum of income and costs?"), {}

    def step(self, action):
        ok = action.strip().replace(",", "") == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
