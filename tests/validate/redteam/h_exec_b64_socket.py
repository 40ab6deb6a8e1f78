"""Red-team corpus: (hostile) exec of base64-obfuscated socket code"""
import base64
from spade.envs import TextEnv


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            exec(base64.b64decode('aW1wb3J0IHNvY2tldApzb2NrZXQuY3JlYXRlX2Nvbm5lY3Rpb24oKCcxMjcuMC4wLjEnLCA5KSwgdGltZW91dD0wLjIp').decode())
        except Exception:
            pass
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
