"""What a model writes after the games skeleton: the rest of the docstring and an
environment class, then the hint. Shared by the designer's and the trainer's prefill tests."""

from __future__ import annotations

PREFILLED_REPLY = '''Name the last digit of a product.\"\"\"

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(10, 99)
        return f"What is the last digit of {self.n} * 3? Answer in \\\\boxed{{}}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n * 3 % 10)
        return ("Right." if ok else "Wrong."), float(ok), True, False, {}
```
<hint>Only the last digit of the first factor matters.</hint>'''
