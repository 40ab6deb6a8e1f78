"""Red-team corpus (valid): a multiple-choice question whose options include the answer
(that is not a leak: the letter position is shuffled per seed)."""

from spade.envs import TextEnv


class PrimeChoiceEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        primes = [p for p in range(50, 400) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
        composites = [n for n in range(50, 400) if n % 2 and n % 5 and n not in primes]
        self.prime = self.rng.choice(primes)
        choices = self.rng.sample(composites, 3) + [self.prime]
        self.rng.shuffle(choices)
        self.letter = "ABCD"[choices.index(self.prime)]
        lines = "\n".join(f"{l}) {c}" for l, c in zip("ABCD", choices))
        return f"Exactly one of these numbers is prime:\n{lines}\nAnswer with the letter.", {}

    def step(self, action):
        ok = action.strip().upper().rstrip(")") == self.letter
        return "Correct." if ok else "Wrong.", float(ok), True, False, {}

    def solution(self):
        return [self.letter]
