"""Red-team corpus (valid): a worker thread started at import serves a job queue; each
reset hands it a job and waits for the answer, so between calls the thread only blocks on
the empty queue. A thread pool kept for later calls, likewise idle."""
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

from spade.envs import TextEnv

JOBS, DONE = queue.Queue(), queue.Queue()
POOL = ThreadPoolExecutor(max_workers=2)


def _serve():
    while True:
        a, b = JOBS.get()
        DONE.put(a * b)


threading.Thread(target=_serve, daemon=True).start()


class QueuedProductEnv(TextEnv):
    max_turns = 2

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.a, self.b = self.rng.randint(100, 999), self.rng.randint(100, 999)
        JOBS.put((self.a, self.b))
        self.answer = DONE.get(timeout=5)
        assert POOL.submit(pow, self.a, 2).result() == self.a**2
        return f"What is {self.a} times {self.b}?", {}

    def step(self, action):
        ok = action.strip() == str(self.answer)
        return ("Correct." if ok else "Wrong."), float(ok), ok, False, {}

    def solution(self):
        return [str(self.answer)]
