"""Red-team corpus: (buggy) an episode that never ends."""
from spade.envs import TextEnv


class EchoEnv(TextEnv):
    max_turns = 5

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.word = self.rng.choice(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
        return f"Keep talking about {self.word}.", {}

    def step(self, action):
        return f"You said {action!r}.", 0.0, False, False, {}
