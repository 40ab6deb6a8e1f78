"""Red-team corpus (valid): the answer is one of four numbers no observation prints, and
the hint names one of them while it explains the method. Typed as a constant, that number
wins about a quarter of the instances -- as often as its neighbours, which the hint does not
name: a small answer space, not a password."""
from spade.envs import TextEnv


class RemainderEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a = self.rng.randint(10**6, 10**7)
        self.b = self.rng.randint(10**6, 10**7)
        return (f"Take {self.a} plus {self.b}, find the remainder when dividing by four, "
                "and add five to it. Reply with the number only."), {}

    def step(self, action):
        ok = action.strip() == str(self.answer())
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def answer(self):
        return (self.a + self.b) % 4 + 5

    def solution(self):
        return [str(self.answer())]
