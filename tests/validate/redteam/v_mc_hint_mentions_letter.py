"""Red-team corpus (valid): a multiple-choice task whose hint names a letter while teaching a
method; the letter is right for a quarter of the instances, as any letter is."""
from spade.envs import TextEnv


class QuizEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        a, b = self.rng.randint(10, 99), self.rng.randint(10, 99)
        self.right = a * b
        opts = [self.right + d for d in (0, -10, 10, 20)]
        self.rng.shuffle(opts)
        self.letter = "ABCD"[opts.index(self.right)]
        self.tries = 0
        text = "\n".join(f"{l}) {v}" for l, v in zip("ABCD", opts))
        return f"What is {a} * {b}?\n{text}\nAnswer with a letter.", {}

    def step(self, action):
        self.tries += 1
        ok = action.strip().upper() == self.letter
        return ("Correct." if ok else "Wrong."), float(ok), ok or self.tries >= 2, False, {}

    def solution(self):
        return [self.letter]
