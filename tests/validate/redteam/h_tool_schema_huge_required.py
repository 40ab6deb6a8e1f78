"""Red-team corpus (hostile, parent stall): a tool schema whose `required` lists 40,000 mixed
items; a meta-schema uniqueItems check over it is quadratic in the parent."""
from spade.envs import ToolEnv, tool


class LongListEnv(ToolEnv):
    max_turns = 5

    @classmethod
    def tools(cls):
        specs = super().tools()
        params = specs[0]["function"]["parameters"]
        params["required"] = [i if i % 2 else [i] for i in range(40_000)]
        return specs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.code = str(self.rng.randint(100000, 999999))
        return "Read the code and answer with it.", {}

    @tool
    def read(self, box: str) -> str:
        """Read a code."""
        return self.code

    def check(self):
        return float(self.submitted_answer == self.code)

    def solution(self):
        return [{"name": "read", "arguments": {"box": "x"}}, self.code]
