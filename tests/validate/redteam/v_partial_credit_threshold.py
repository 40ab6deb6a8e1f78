"""Red-team corpus (valid): partial credit over several turns, a success_threshold override
below 1.0, and a max_turns class attribute the env enforces itself."""

from spade.envs import TextEnv


class FactorHuntEnv(TextEnv):
    """Name the prime factors of a number one per turn; each correct new factor earns a share."""

    max_turns = 6
    success_threshold = 0.99

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        primes = [3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]
        self.factors = sorted(self.rng.sample(primes, 3))
        self.n = self.factors[0] * self.factors[1] * self.factors[2]
        self.found = set()
        self.turn = 0
        return (f"{self.n} is the product of three distinct primes. Name one prime factor per "
                f"turn; you have {self.max_turns} turns."), {}

    def step(self, action):
        self.turn += 1
        reward = 0.0
        text = action.strip()
        if text.isdigit() and int(text) in self.factors and int(text) not in self.found:
            self.found.add(int(text))
            reward = 1 / 3
            msg = f"Yes, {text} divides {self.n}."
        else:
            msg = "No new factor."
        done = len(self.found) == 3
        return msg, reward, done, (not done and self.turn >= self.max_turns), {}

    def solution(self):
        return [str(p) for p in self.factors]
