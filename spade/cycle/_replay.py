"""Replays of a design's plays in a fresh worker, for the regret guard.

The guard (``spade.cycle._fair_play``) asks whether a hinted win still wins when a string
the hint carries is taken out of its final reply. This plays that question: the same
seed, the same earlier actions and tool calls, the changed final action, in one worker of
the design started for the purpose (loaded on the first replay, so a design that needs
none costs nothing).

The replay must look like training to the environment, or the environment can let the
password-less reply win there only: its worker is loaded the way the play pool loads a
training instance (through a :class:`HandlePool` of its own: the sandbox's one file name,
the design's id, a clock gap drawn from the same range as training's instances).
"""

from __future__ import annotations

from spade.cycle._pool import HandlePool
from spade.episodes import Trajectory, _replies
from spade.rewards import episode_return, is_win
from spade.sandbox import EnvFault, EnvHandle, Sandbox


class Replayer:
    """``replay(trajectory, final_action) -> won`` for one design (a context manager).

    ``env_id``, ``answer_delays`` and ``seed`` are what the play pool loaded the design's
    training instances with (its id, the range of the drawn latencies, a seed for the
    draw), so the replay's worker cannot be told apart from theirs."""

    def __init__(self, sandbox: Sandbox, source: str, threshold: float, *,
                 env_id: str = "env", answer_delays: tuple[float, float] | None = None,
                 seed: int = 0) -> None:
        self._threshold, self._env_id = threshold, env_id
        self._pool = HandlePool(sandbox, {env_id: source}, answer_delays=answer_delays,
                                seed=seed)
        self._handle: EnvHandle | None = None
        self.replays = 0

    def __call__(self, trajectory: Trajectory, final: str) -> bool:
        """Whether the play wins with ``final`` as its last action; an environment fault
        (the environment refusing to be replayed) counts as a loss."""
        self.replays += 1
        try:
            if self._handle is None:
                self._handle = self._pool.acquire(self._env_id)
            return self._play(self._handle, trajectory, final)
        except EnvFault:
            self.close()
            return False

    def _play(self, handle: EnvHandle, trajectory: Trajectory, final: str) -> bool:
        handle.reset(trajectory.seed)
        rewards: list[float] = []
        last = len(trajectory.turns) - 1
        for i, turn in enumerate(trajectory.turns):
            for call in turn.tool_calls:
                handle.call_tool(str(call.get("name")), dict(call.get("arguments") or {}))
            action = final if i == last else turn.action
            if action is None:
                continue
            _, reward, terminated, truncated = _replies.step_result(handle.step(action))
            rewards.append(reward)
            if terminated or truncated:
                break
        return bool(rewards) and is_win(episode_return(rewards), self._threshold)

    def close(self) -> None:
        if self._handle is not None:
            self._pool.release(self._env_id, self._handle, broken=True)
            self._handle = None
        self._pool.close()

    def __enter__(self) -> Replayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
