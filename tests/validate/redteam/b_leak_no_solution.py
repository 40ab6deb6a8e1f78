"""Red-team corpus (buggy): the observation prints the code, and there is no solution() to
compare it with (solution() is optional)."""
from spade.envs import TextEnv


class DoorCodeEnv(TextEnv):
    max_turns = 3

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.code = str(self.rng.randint(1000, 9999))
        self.tries = 0
        return f"A note by the door reads: code {self.code}. What is the door code?", {}

    def step(self, action):
        self.tries += 1
        ok = action.strip() == self.code
        done = ok or self.tries >= 3
        return ("The door opens." if ok else "Nothing happens."), float(ok), done, False, {}
