"""Red-team corpus (valid): a tool env whose tools validate their own input and answer bad
calls with an error text (never raising); integer answer; numpy ints in tool results."""

import numpy as np

from spade.envs import ToolEnv, tool


class InventoryEnv(ToolEnv):
    max_turns = 10

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.skus = {f"SKU-{self.rng.randint(1000, 9999)}": int(self.rng.randint(0, 50))
                     for _ in range(6)}
        self.asked = self.rng.sample(sorted(self.skus), 3)
        return ("What is the total stock of " + ", ".join(self.asked)
                + "? Answer with a single integer."), {}

    @tool
    def stock(self, sku: str) -> str:
        """Current stock level of one SKU."""
        if sku not in self.skus:
            return f"error: no such sku {sku!r}; skus look like SKU-1234"
        return f"{sku}: {np.int64(self.skus[sku])} units"

    @tool
    def list_skus(self) -> list:
        """All SKUs in the warehouse."""
        return sorted(self.skus)

    def check(self):
        try:
            return float(int(str(self.submitted_answer).strip()) == sum(self.skus[s] for s in self.asked))
        except ValueError:
            return 0.0

    def solution(self):
        calls = [{"name": "stock", "arguments": {"sku": s}} for s in self.asked]
        return calls + [str(sum(self.skus[s] for s in self.asked))]
