"""Red-team corpus (valid): a multi-turn game whose solution ends with a fixed command word
('submit') that the instructions mention; the command is not the answer."""

from spade.envs import TextEnv


class StackSortEnv(TextEnv):
    max_turns = 12

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.items = self.rng.sample(range(10, 99), 4)
        self.turn = 0
        return (f"List: {self.items}. Each turn answer 'swap i j' (0-based) to swap two items. "
                "When the list is in ascending order, type submit to finish."), {}

    def step(self, action):
        self.turn += 1
        parts = action.strip().lower().split()
        out_of_turns = self.turn >= self.max_turns
        if parts == ["submit"]:
            ok = self.items == sorted(self.items)
            return ("Sorted!" if ok else "Not sorted."), float(ok), True, False, {}
        if len(parts) == 3 and parts[0] == "swap" and parts[1].isdigit() and parts[2].isdigit():
            i, j = int(parts[1]), int(parts[2])
            if i < 4 and j < 4:
                self.items[i], self.items[j] = self.items[j], self.items[i]
                return f"List: {self.items}", 0.0, False, out_of_turns, {}
        return "Unknown command.", 0.0, False, out_of_turns, {}

    def solution(self):
        items, moves = list(self.items), []
        for i in range(len(items)):
            j = items.index(min(items[i:]), i)
            if j != i:
                items[i], items[j] = items[j], items[i]
                moves.append(f"swap {i} {j}")
        return moves + ["submit"]
