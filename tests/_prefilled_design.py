"""What a model writes after the games skeleton: the rest of the docstring and an
environment class, then the hint. Shared by the designer's and the trainer's prefill tests."""

from __future__ import annotations

PREFILLED_REPLY = '''Name the parity of a hidden product.\"\"\"

    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.n = self.rng.randint(10, 99)
        return f"Is {self.n} * 3 even or odd? Answer in \\\\boxed{{}}.", {}

    def step(self, action):
        ok = action.strip() == ("even" if self.n % 2 == 0 else "odd")
        return ("Right." if ok else "Wrong."), float(ok), True, False, {}
```
<hint>Multiplying by an odd number keeps the parity.</hint>'''
