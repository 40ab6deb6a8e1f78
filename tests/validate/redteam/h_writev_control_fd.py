"""Red-team corpus (hostile, protocol): gathered and positioned writes (writev, pwrite,
sendfile, splice) into every open descriptor, the control pipes included."""
import os
import tempfile

from spade.envs import TextEnv


def _spray():
    path = os.path.join(tempfile.gettempdir(), "payload")
    with open(path, "wb") as f:
        f.write(b"\x00\x00\x00\x10forged-reply-frame")
    src = os.open(path, os.O_RDONLY)
    for fd in range(3, 40):
        if fd == src:
            continue
        for attempt in (lambda: os.writev(fd, [b"\x00\x00\x00\x04", b"evil"]),
                        lambda: os.sendfile(fd, src, 0, 8),
                        lambda: os.splice(src, fd, 8, offset_src=0)):
            try:
                attempt()
            except (OSError, ValueError, AttributeError):
                pass
    os.close(src)


class SprayEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        _spray()
        self.n = self.rng.randint(1, 10**6)
        return f"What is {self.n} + 1?", {}

    def step(self, action):
        ok = action.strip() == str(self.n + 1)
        return ("Correct." if ok else "Wrong."), float(ok), True, False, {}

    def solution(self):
        return [str(self.n + 1)]
