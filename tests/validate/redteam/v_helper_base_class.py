"""Red-team corpus (valid): an intermediate helper base class in the module (name not ending
in Env), `import spade.envs as se`, a custom __init__ calling super().__init__(), a render
method, functools.lru_cache, heapq and copy.deepcopy."""

import copy
import functools
import heapq

import spade.envs as se


@functools.lru_cache(maxsize=None)
def tri(n: int) -> int:
    return n * (n + 1) // 2


class PuzzleBase(se.TextEnv):
    max_turns = 1

    def __init__(self, difficulty: int = 3):
        super().__init__()
        self.difficulty = difficulty
        self.log = []

    def render(self):
        return "\n".join(self.log)


class KSmallestEnv(PuzzleBase):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.values = [self.rng.randint(1, 999) for _ in range(8 + self.difficulty)]
        self.k = self.rng.randint(2, 5)
        snapshot = copy.deepcopy(self.values)
        self.log.append(str(snapshot))
        return (f"Numbers: {snapshot}. What is the sum of the {self.k} smallest? "
                f"(hint: there are tri({self.k}) = {tri(self.k)} pairwise ranks)"), {}

    def step(self, action):
        ok = action.strip() == str(sum(heapq.nsmallest(self.k, self.values)))
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [str(sum(heapq.nsmallest(self.k, self.values)))]
