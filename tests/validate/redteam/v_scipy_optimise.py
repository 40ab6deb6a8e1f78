"""Red-team corpus (valid): an optimisation env that checks its answer with
scipy.optimize.linprog (scipy is installed with the project; it imports ctypes internally,
which is library behaviour, not the env reaching for native code)."""

from scipy.optimize import linprog

from spade.envs import TextEnv


class DietEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.cost = [self.rng.randint(2, 9), self.rng.randint(2, 9)]
        self.need = self.rng.randint(10, 40)
        res = linprog(self.cost, A_ub=[[-1, -2]], b_ub=[-self.need], bounds=[(0, None), (0, None)])
        self.best = round(res.fun, 2)
        return (f"Food A costs {self.cost[0]} per kg and gives 1 unit of protein; food B costs "
                f"{self.cost[1]} per kg and gives 2 units. Minimum cost for {self.need} units? "
                "Round to 2 decimals."), {}

    def step(self, action):
        try:
            ok = abs(float(action.strip()) - self.best) < 0.01
        except ValueError:
            ok = False
        return "ok", float(ok), True, False, {}

    def solution(self):
        return [f"{self.best:.2f}"]
