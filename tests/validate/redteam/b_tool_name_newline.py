"""Red-team corpus (buggy): a tool whose advertised name ends in a newline (checked with
re.match(...$), which lets it through); no agent can call it by that name."""
from spade.envs import ToolEnv, tool


class DrawerEnv(ToolEnv):
    max_turns = 5

    @classmethod
    def tools(cls):
        specs = super().tools()
        for spec in specs:
            spec["function"]["name"] = spec["function"]["name"] + "\n"
        return specs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.drawer = f"D{self.rng.randint(1000, 9999)}"
        self.code = str(self.rng.randint(100000, 999999))
        return f"Read the code in drawer {self.drawer} and answer with it.", {}

    @tool
    def open_drawer(self, drawer: str) -> str:
        """Open a drawer and read what is inside."""
        return self.code if drawer == self.drawer else f"Error: no drawer {drawer}"

    def check(self):
        return float(self.submitted_answer == self.code)

    def solution(self):
        return [{"name": "open_drawer", "arguments": {"drawer": self.drawer}}, self.code]
