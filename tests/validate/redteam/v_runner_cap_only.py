"""Red-team corpus (valid?): a guessing game that ends on a correct guess and relies on the
runner's max_turns cap for truncation (the environment contract: "max_turns ... optional; the runner
enforces a global cap too"; "the runner truncates; the env must not loop")."""

from spade.envs import TextEnv


class HigherLowerEnv(TextEnv):
    max_turns = 12

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 1000)
        return "Guess my number between 1 and 1000. I will say higher or lower.", {}

    def step(self, action):
        try:
            guess = int(action.strip())
        except ValueError:
            return "Please answer with a whole number.", 0.0, False, False, {}
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        return ("Higher." if guess < self.secret else "Lower."), 0.0, False, False, {}

    def solution(self):
        lo, hi, out = 1, 1000, []
        while True:
            mid = (lo + hi) // 2
            out.append(str(mid))
            if mid == self.secret:
                return out
            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)
