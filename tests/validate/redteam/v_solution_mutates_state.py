"""Red-team corpus (valid): a sloppy but common solution() that reads the answer off the
env's own hidden state by consuming it (pops the remaining targets). The runner never calls
solution() during play, so the environment plays correctly; a checker that plays a probe
episode right after calling solution() without a fresh reset sees a spoiled state (no
targets left, so any move "wins")."""

from spade.envs import TextEnv

ANIMALS = ["cat", "dog", "owl", "yak", "emu", "eel", "ant", "bee", "elk", "gnu"]


class RecallEnv(TextEnv):
    max_turns = 6

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.targets = self.rng.sample(ANIMALS, 3)
        self.turn = 0
        clues = "; ".join(f"{len(a)} letters, starts with {a[0]}, ends with {a[-1]}"
                          for a in self.targets)
        return f"Name three animals in order, one per turn. Clues: {clues}.", {}

    def step(self, action):
        self.turn += 1
        if not self.targets:
            return "All found!", 1.0, True, False, {}
        if action.strip().lower() == self.targets[0]:
            self.targets.pop(0)
            if not self.targets:
                return "All found!", 1.0, True, False, {}
            return "Correct, next.", 0.0, False, False, {}
        return "Wrong.", 0.0, self.turn >= self.max_turns, False, {}

    def solution(self):
        moves = []
        while self.targets:
            moves.append(self.targets.pop(0))
        return moves
