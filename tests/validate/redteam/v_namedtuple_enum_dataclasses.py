"""Red-team corpus (valid): several docstring-less dataclasses, a NamedTuple and an Enum at
module level (very common in generated code)."""

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

from spade.envs import TextEnv


class Pos(NamedTuple):
    row: int
    col: int


class Dir(enum.Enum):
    UP = (-1, 0)
    DOWN = (1, 0)
    LEFT = (0, -1)
    RIGHT = (0, 1)


@dataclass
class Robot:
    pos: Pos
    moves: int = 0


@dataclass
class Board:
    size: int
    goal: Pos
    walls: set = field(default_factory=set)


@dataclass(frozen=True)
class Config:
    size: int = 5
    budget: int = 12


class RobotGridEnv(TextEnv):
    max_turns = 12

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        cfg = Config()
        self.board = Board(cfg.size, Pos(self.rng.randrange(cfg.size), self.rng.randrange(cfg.size)))
        start = Pos(self.rng.randrange(cfg.size), self.rng.randrange(cfg.size))
        while start == self.board.goal:
            start = Pos(self.rng.randrange(cfg.size), self.rng.randrange(cfg.size))
        self.robot = Robot(start)
        return (f"A robot on a {cfg.size}x{cfg.size} grid is at {tuple(start)}; reach "
                f"{tuple(self.board.goal)}. Move with up/down/left/right."), {}

    def step(self, action):
        self.robot.moves += 1
        name = action.strip().upper()
        if name in Dir.__members__:
            dr, dc = Dir[name].value
            r = min(max(self.robot.pos.row + dr, 0), self.board.size - 1)
            c = min(max(self.robot.pos.col + dc, 0), self.board.size - 1)
            self.robot.pos = Pos(r, c)
        if self.robot.pos == self.board.goal:
            return "Goal reached!", 1.0, True, False, {}
        out = self.robot.moves >= self.max_turns
        return f"Robot at {tuple(self.robot.pos)}.", 0.0, out, False, {}

    def solution(self):
        (r, c), (gr, gc) = self.robot.pos, self.board.goal
        moves = ["down" if gr > r else "up"] * abs(gr - r)
        return moves + ["right" if gc > c else "left"] * abs(gc - c)
