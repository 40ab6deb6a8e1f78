"""Red-team corpus: (buggy) call_tool raises on calls it does not like"""
from spade.envs import ToolEnv, tool


class VaultEnv(ToolEnv):
    max_turns = 5

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.box = f"B{self.rng.randint(1000, 9999)}"
        self.code = str(self.rng.randint(100000, 999999))
        return f"Read the code stored in box {self.box} and answer with it.", {}

    @tool
    def read_box(self, box: str) -> str:
        """Read the code stored in a box."""
        if box != self.box:
            return f"Error: no box {box}"
        return self.code

    def check(self):
        return float(self.submitted_answer == self.code)

    def solution(self):
        return [{"name": "read_box", "arguments": {"box": self.box}}, self.code]

    def call_tool(self, name, arguments=None):
        if name != "read_box":
            raise KeyError(name)
        return super().call_tool(name, arguments)
