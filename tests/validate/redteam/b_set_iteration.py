"""Red-team corpus: (buggy) picks from list(set_of_strings): order depends on the hash seed."""
from spade.envs import TextEnv

COLOURS = {"amber", "azure", "beige", "coral", "cyan", "ivory", "jade", "khaki", "lilac",
           "mauve", "ochre", "olive", "peach", "plum", "rust", "sage", "teal", "umber"}


class ColourEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.colour = list(COLOURS)[self.rng.randrange(len(COLOURS))]
        letters = sorted(self.colour)
        return f"Which colour word has the letters {''.join(letters)}?", {}

    def step(self, action):
        ok = action.strip().lower() == self.colour
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [self.colour]
