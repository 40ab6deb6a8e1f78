"""Red-team corpus (valid): the classic hidden-number game without a solution() (it is
optional). Every seed shows the same opening text; the instances differ only in the hidden
number, which play reveals."""

from spade.envs import TextEnv


class GuessNumberEnv(TextEnv):
    max_turns = 7

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.secret = self.rng.randint(1, 100)
        self.left = self.max_turns
        return ("I'm thinking of a number between 1 and 100. You have 7 guesses; after each "
                "wrong guess I say higher or lower."), {}

    def step(self, action):
        self.left -= 1
        try:
            guess = int(action.strip())
        except ValueError:
            return "Please guess a whole number.", 0.0, self.left <= 0, False, {}
        if guess == self.secret:
            return "Correct!", 1.0, True, False, {}
        hint = "Higher." if guess < self.secret else "Lower."
        return f"{hint} {self.left} guesses left.", 0.0, self.left <= 0, False, {}
