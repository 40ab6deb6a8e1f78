"""The state of one running episode, turn by turn, until it freezes into a Trajectory."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spade.envs import (
    ToolCallError,
    extract_answer,
    parse_game_action,
    parse_tool_calls,
    strip_think,
)
from spade.episodes import _prompts, _replies
from spade.episodes._provider import EnvProvider
from spade.episodes._types import EpisodeJob, StopReason, Trajectory, Turn
from spade.policy._types import Generation, Message, SamplingParams, TokenPolicy
from spade.rewards import episode_return, is_win
from spade.sandbox._types import EnvFault, FaultKind

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle


def _reset_result(raw: Any) -> str:
    """The observation of a ``reset`` reply, checked (the validator may not have run)."""
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        raise EnvFault(FaultKind.PROTOCOL, f"reset returned {type(raw).__name__}, not (obs, info)")
    return _replies.text(raw[0], "the first observation")


@dataclass(frozen=True)
class _Outcome:
    """What one reply did in the environment."""

    action: str | None
    calls: tuple[dict[str, Any], ...]
    feedback: list[Message]
    reward: float
    ended: bool  # the environment ended the episode
    truncated: bool  # ... by truncation rather than termination


class Episode:
    """The mutable state of one running episode; frozen into a Trajectory at the end.

    A turn runs in three phases so that environment calls of different episodes can overlap
    in threads while everything touching the policy stays on the caller's thread:
    ``record`` (main) -> ``act`` (any thread) -> ``settle`` (main).
    """

    def __init__(self, job: EpisodeJob, cap: int) -> None:
        self.job = job
        self.handle: EnvHandle | None = None
        self.kind = "game"
        self.threshold = 1.0
        self.max_turns = cap
        self.tools: list[dict[str, Any]] = []
        self.ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.has_logprobs = True
        self.prompt_len = 0
        self.messages: list[Message] = []
        self.turns: list[Turn] = []
        self.rewards: list[float] = []
        self.stop: StopReason | None = None
        self.fault: str | None = None
        self._observation = ""
        self._gen = Generation("")
        self._turn = Turn(0, "", 0, 0, "stop")
        self._outcome: _Outcome | EnvFault = EnvFault(FaultKind.PROTOCOL, "no reply acted on")

    def fail(self, exc: EnvFault) -> None:
        self.fault = _replies.printable(str(exc))
        self.stop = StopReason.TIMEOUT if exc.kind == FaultKind.TIMEOUT else StopReason.ENV_ERROR

    def open(self, provider: EnvProvider) -> None:
        """Get an instance and reset it."""
        try:
            self.handle = provider.acquire(self.job.env_id)
            self.kind, self.threshold, turns, self.tools = _replies.env_facts(self.handle.info)
            self.max_turns = max(1, min(turns, self.max_turns))
            self._observation = _reset_result(self.handle.reset(seed=self.job.seed))
        except EnvFault as exc:
            self.fail(exc)

    def prime(self, policy: TokenPolicy, params: SamplingParams, list_tools: bool) -> None:
        """Render the first prompt: system prompt plus the first observation (and hint)."""
        if self.stop is not None:
            return
        messages = _prompts.initial_messages(
            self.kind, self._observation, self.job.hint, self.tools, list_tools=list_tools
        )
        self.messages.extend(messages)
        tools = self.tools if (self.tools and not list_tools) else None
        self._extend(policy.render(messages, tools=tools), sampled=None)
        self.prompt_len = len(self.ids)
        self.check_context(policy, params)

    def check_context(self, policy: TokenPolicy, params: SamplingParams, extra: int = 0) -> bool:
        """Stop as ``context_exhausted`` when the next generation could not fit."""
        if len(self.ids) + extra + params.max_new_tokens > policy.context_window:
            self.stop = StopReason.CONTEXT_EXHAUSTED
            return False
        return True

    def _extend(self, ids: Sequence[int], sampled: Generation | None) -> None:
        self.ids.extend(ids)
        self.mask.extend([0 if sampled is None else 1] * len(ids))
        if sampled is None:
            self.logprobs.extend([0.0] * len(ids))
        elif sampled.logprobs is None:
            self.has_logprobs = False
            self.logprobs.extend([0.0] * len(ids))
        else:
            self.logprobs.extend(float(x) for x in sampled.logprobs)

    def record(self, gen: Generation, policy: TokenPolicy) -> None:
        """Append one sampled reply (mask 1) and remember it for :meth:`act`."""
        if len(gen.token_ids) == 0 and gen.text:
            raise RuntimeError(f"policy {policy.name!r} returned text without token ids")
        if gen.logprobs is not None and len(gen.logprobs) != len(gen.token_ids):
            raise RuntimeError(f"policy {policy.name!r} returned misaligned log-probs")
        start = len(self.ids)
        self._extend(gen.token_ids, sampled=gen)
        self.messages.append({"role": "assistant", "content": gen.text})
        self._gen = gen
        self._turn = Turn(len(self.turns), gen.text, start, len(self.ids), gen.finish_reason)

    def act(self) -> None:
        """Carry out the recorded reply in the environment (safe in a worker thread)."""
        text = self._gen.text
        try:
            self._outcome = self._act_game(text) if self.kind == "game" else self._act_tool(text)
        except EnvFault as exc:
            self._outcome = exc

    def settle(self, policy: TokenPolicy, params: SamplingParams) -> None:
        """Book the outcome of :meth:`act` and append the feedback for the next turn."""
        outcome, turn = self._outcome, self._turn
        if isinstance(outcome, EnvFault):
            self.turns.append(turn)
            self.rewards.append(0.0)
            self.fail(outcome)
            return
        self.turns.append(dataclasses.replace(
            turn, action=outcome.action, tool_calls=outcome.calls, reward=outcome.reward,
            feedback=tuple(str(m["content"]) for m in outcome.feedback),
        ))
        self.rewards.append(outcome.reward)
        self.messages.extend(outcome.feedback)
        if outcome.ended:
            won = is_win(episode_return(self.rewards), self.threshold)
            self.stop = (StopReason.WON if won
                         else StopReason.TRUNCATED if outcome.truncated else StopReason.TERMINATED)
        elif len(self.turns) >= self.max_turns:
            self.stop = StopReason.MAX_TURNS
        else:
            piece = policy.continuation(outcome.feedback, self._gen)
            if self.check_context(policy, params, extra=len(piece)):
                self._extend(piece, sampled=None)

    def _act_game(self, text: str) -> _Outcome:
        assert self.handle is not None
        action = parse_game_action(text)
        observation, reward, terminated, truncated = _replies.step_result(self.handle.step(action))
        feedback: list[Message] = [{"role": "user", "content": observation}]
        return _Outcome(action, (), feedback, reward, terminated or truncated,
                        truncated and not terminated)

    def _act_tool(self, text: str) -> _Outcome:
        assert self.handle is not None
        calls = parse_tool_calls(text)
        answer = extract_answer(strip_think(text))
        feedback: list[Message] = []
        parsed: list[dict[str, Any]] = []
        for call in calls:
            if isinstance(call, ToolCallError):
                feedback.append({"role": "tool", "content": _prompts.tool_error(call.reason)})
                continue
            parsed.append(call.to_dict())
            result = self.handle.call_tool(call.name, dict(call.arguments))
            feedback.append({"role": "tool", "name": call.name,
                             "content": _replies.text(result, f"tool {call.name!r}'s result")})
        if answer is not None:  # the answer ends the episode, after this reply's calls ran
            reply = self.handle.step(answer)
            observation, reward, terminated, truncated = _replies.step_result(reply)
            feedback.append({"role": "user", "content": observation})
            return _Outcome(answer, tuple(parsed), feedback, reward, True,
                            truncated and not terminated)
        if not calls:
            feedback.append({"role": "user", "content": _prompts.nudge()})
        return _Outcome(None, tuple(parsed), feedback, 0.0, False, False)

    def trajectory(self) -> Trajectory:
        assert self.stop is not None
        total = episode_return(self.rewards)
        return Trajectory(
            env_id=self.job.env_id,
            seed=self.job.seed,
            arm=self.job.arm,
            kind=self.kind,
            token_ids=tuple(self.ids),
            loss_mask=tuple(self.mask),
            logprobs=tuple(self.logprobs) if self.has_logprobs else None,
            prompt_len=self.prompt_len,
            turns=tuple(self.turns),
            rewards=tuple(self.rewards),
            total_return=total,
            won=bool(self.turns) and is_win(total, self.threshold),
            stop_reason=self.stop,
            max_turns=self.max_turns,
            hint=self.job.hint,
            env_fault=self.fault,
            messages=tuple(self.messages),
            reset_observation=self._observation,
        )
