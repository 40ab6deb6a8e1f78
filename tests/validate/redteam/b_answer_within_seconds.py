"""Red-team corpus (buggy): the answer counts only when it comes within 5 seconds of the
question. A validator answering at once wins; a language model, seconds per reply, hardly
ever does: the outcome depends on the player's speed, not on its answer."""
import time

from spade.envs import TextEnv


class QuickSumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.asked = time.monotonic()
        self.a, self.b = self.rng.randint(100, 999), self.rng.randint(100, 999)
        return f"Quick: what is {self.a} + {self.b}? You have 5 seconds.", {}

    def step(self, action):
        late = time.monotonic() - self.asked > 5.0
        ok = not late and action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong or too late."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
