"""Red-team corpus (valid): a data-lookup puzzle that builds its table with pandas."""

import pandas as pd

from spade.envs import TextEnv


class TableEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        names = self.rng.sample(["ash", "birch", "cedar", "elm", "fir", "oak", "pine", "yew"], 5)
        self.df = pd.DataFrame({"tree": names, "height": [self.rng.randint(5, 40) for _ in names]})
        self.answer = str(self.df.loc[self.df["height"].idxmax(), "tree"])
        return f"{self.df.to_string(index=False)}\nWhich tree is tallest? (ties: first listed)", {}

    def step(self, action):
        ok = action.strip().lower() == self.answer
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.answer]
