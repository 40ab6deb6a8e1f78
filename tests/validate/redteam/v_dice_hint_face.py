"""Red-team corpus (valid): a tiny answer space. The answer is a die's face (1-6) worked
out from clues; the hint's worked example names a face, which is the right answer of
about one instance in six, as every other face is."""
from spade.envs import TextEnv


class DiceClueEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.face = self.rng.randint(1, 6)
        k = self.rng.randint(2, 9)
        return (f"A die was rolled. {k} times its face plus {self.face * 7 % 5} is "
                f"{k * self.face + self.face * 7 % 5}. Which face (1-6)?"), {}

    def step(self, action):
        ok = action.strip() == str(self.face)
        return ("Correct." if ok else "Wrong."), float(ok), ok, False, {}

    def solution(self):
        return [str(self.face)]
