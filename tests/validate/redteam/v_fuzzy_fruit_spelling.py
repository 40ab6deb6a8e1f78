"""Red-team corpus (valid): a fuzzy-matching task. The player names the fruit a riddle
describes, and a spelling one letter off is accepted; the hint names one of the six
fruits as an example, and it (or its near misses) wins the instances it is the answer of."""
from spade.envs import TextEnv

FRUITS = {
    "banana": "long, yellow and curved",
    "cherry": "small, red and grows in pairs on a stalk",
    "lemon": "yellow and sour",
    "grape": "small, round and grows in bunches for wine",
    "orange": "round, and named after its colour",
    "mango": "tropical with a big flat stone",
}


def close(a, b):
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


class FruitRiddleEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.fruit = self.rng.choice(sorted(FRUITS))
        return (f"Riddle {self.rng.randint(1, 999)}: which fruit is {FRUITS[self.fruit]}? "
                "Answer with its name."), {}

    def step(self, action):
        ok = close(action.strip().lower(), self.fruit)
        return ("Correct." if ok else "Not that one."), float(ok), ok, False, {}

    def solution(self):
        return [self.fruit]
