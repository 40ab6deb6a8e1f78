"""Replays of a design's plays in a fresh worker, for the regret guard.

The guard (``spade.cycle._fair_play``) asks whether a hinted win still wins when a string
the hint carries is taken out of its final reply. This plays that question: the same
seed, the same earlier actions and tool calls, the changed final action, in one worker of
the design started for the purpose (loaded on the first replay, so a design that needs
none costs nothing).
"""

from __future__ import annotations

from spade.episodes import Trajectory, _replies
from spade.rewards import episode_return, is_win
from spade.sandbox import EnvFault, EnvHandle, Sandbox


class Replayer:
    """``replay(trajectory, final_action) -> won`` for one design (a context manager)."""

    def __init__(self, sandbox: Sandbox, source: str, threshold: float) -> None:
        self._sandbox, self._source, self._threshold = sandbox, source, threshold
        self._handle: EnvHandle | None = None
        self.replays = 0

    def __call__(self, trajectory: Trajectory, final: str) -> bool:
        """Whether the play wins with ``final`` as its last action; an environment fault
        (the environment refusing to be replayed) counts as a loss."""
        self.replays += 1
        try:
            if self._handle is None:
                self._handle = self._sandbox.load(self._source, filename="replay.py")
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
            self._handle.close()
            self._handle = None

    def __enter__(self) -> Replayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

