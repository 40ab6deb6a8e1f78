"""Red-team corpus (buggy): a win pays 10**400, an integer no float can hold."""
from spade.envs import TextEnv


class JackpotEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), 10**400 if ok else 0, True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
