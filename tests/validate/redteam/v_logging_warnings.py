"""Red-team corpus (valid): module-level logger, logging and warnings calls in step."""

import logging
import warnings

from spade.envs import TextEnv

logger = logging.getLogger(__name__)


class BinaryEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1000, 60000)
        logger.info("new instance %d", self.n)
        return f"Write {self.n} in binary (digits only).", {}

    def step(self, action):
        guess = action.strip()
        if guess.startswith("0b"):
            warnings.warn("agent used a 0b prefix", stacklevel=2)
            guess = guess[2:]
        ok = guess == format(self.n, "b")
        logger.warning("step %s -> %s", action, ok)
        return "ok" if ok else "no", float(ok), True, False, {}

    def solution(self):
        return [format(self.n, "b")]
