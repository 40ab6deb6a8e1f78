"""Red-team corpus (valid): a Wordle-style game without solution(); the opening text is the
same for every seed, the hidden word differs."""

from spade.envs import TextEnv

WORDS = ["crane", "slate", "pride", "ghost", "flame", "brick", "plumb", "dwarf", "nymph",
         "quilt", "vexed", "jumpy", "glyph", "crwth", "fjord", "waltz", "blitz", "squad"]


class WordleEnv(TextEnv):
    max_turns = 6

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.word = self.rng.choice(WORDS)
        self.turn = 0
        return ("Guess the hidden 5-letter word in 6 tries. Feedback per letter: G = right "
                "place, Y = in the word elsewhere, . = absent."), {}

    def step(self, action):
        self.turn += 1
        guess = action.strip().lower()
        out = self.turn >= self.max_turns
        if len(guess) != 5 or not guess.isalpha():
            return "Guess a 5-letter word.", 0.0, out, False, {}
        if guess == self.word:
            return "GGGGG - solved!", 1.0, True, False, {}
        marks = "".join("G" if g == w else ("Y" if g in self.word else ".")
                        for g, w in zip(guess, self.word))
        return f"{guess.upper()}: {marks}", 0.0, out, False, {}
