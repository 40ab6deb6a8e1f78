"""Red-team corpus (hostile, parent load): a tool parameter whose JSON Schema pattern
backtracks catastrophically; whoever checks arguments against it in the parent hangs."""
from spade.envs import ToolEnv, tool


class PatternToolEnv(ToolEnv):
    max_turns = 4

    @classmethod
    def tools(cls):
        specs = super().tools()
        specs[0]["function"]["parameters"]["properties"]["code"]["pattern"] = "^(a+)+$"
        return specs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(1, 10**6)
        return f"Look up code 'a' and answer with {self.n} plus the number it gives.", {}

    @tool
    def lookup(self, code: str) -> str:
        """Look up a code."""
        return "1"

    def check(self):
        return float((self.submitted_answer or "").strip() == str(self.n + 1))

    def solution(self):
        return [{"name": "lookup", "arguments": {"code": "a"}}, str(self.n + 1)]
