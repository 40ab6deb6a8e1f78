"""Red-team corpus (valid): deterministic ids from uuid.UUID(int=rng.getrandbits(128)),
hashlib digests of seeded data, statistics.median."""

import hashlib
import statistics
import uuid

from spade.envs import TextEnv


class MedianEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.case = uuid.UUID(int=self.rng.getrandbits(128))
        self.data = [self.rng.randint(1, 500) for _ in range(9)]
        tag = hashlib.sha256(str(self.data).encode()).hexdigest()[:8]
        return f"Case {self.case} ({tag}): median of {self.data}?", {}

    def step(self, action):
        ok = action.strip() == str(statistics.median(self.data))
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(statistics.median(self.data))]
