"""Red-team corpus (valid): multi-turn with hidden state (a 2-D treasure hunt with distance
feedback), typed helpers, `math.hypot`, and debug prints that must not matter."""

import math

from spade.envs import TextEnv

SIZE = 9


def parse_xy(text):
    parts = text.replace("(", " ").replace(")", " ").replace(",", " ").split()
    if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


class TreasureEnv(TextEnv):
    max_turns = 7

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.tx, self.ty = self.rng.randrange(SIZE), self.rng.randrange(SIZE)
        self.left = self.max_turns
        print(f"[debug] treasure at {self.tx},{self.ty}")
        return (f"A treasure is buried on a {SIZE}x{SIZE} grid (x, y from 0 to {SIZE - 1}). "
                "Dig by answering 'x,y'; I tell you the Manhattan distance."), {}

    def step(self, action):
        self.left -= 1
        spot = parse_xy(action)
        print("[debug] step", action, spot)
        if spot is None:
            return "Give two integers like 3,4.", 0.0, self.left <= 0, False, {}
        d = abs(spot[0] - self.tx) + abs(spot[1] - self.ty)
        if d == 0:
            return "You found it!", 1.0, True, False, {}
        eucl = math.hypot(spot[0] - self.tx, spot[1] - self.ty)
        return f"Distance {d} (straight line {eucl:.2f}).", 0.0, self.left <= 0, False, {}

    def solution(self):
        return ["0,0", f"{self.tx},{self.ty}"]
