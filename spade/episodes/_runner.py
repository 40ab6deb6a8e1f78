"""The multi-turn episode runner: a token-level policy plays sandboxed environments.

Design points (DESIGN §3, §5; issue 3 §3):

- Token-in/token-out. The first prompt is ``policy.render(messages)``; after that every turn
  appends the sampled ids and then ``policy.continuation(new_messages, generation)``. Earlier
  turns are never re-tokenised, so a trainer sees exactly the ids that were sampled.
- One batched ``policy.generate`` call per turn step over ALL active episodes (every
  environment, seed and arm), however many there are.
- One environment instance per concurrent episode (environments are stateful); the caller
  provides them through a factory or an :class:`EnvProvider` and so decides pooling.
- Environment faults end the episode as ``env_error``/``timeout`` and are recorded on the
  trajectory: the designer is penalised, the agent's gradient can be masked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from spade.envs import (
    ToolCallError,
    extract_answer,
    parse_game_action,
    parse_tool_calls,
    strip_think,
)
from spade.episodes import _prompts
from spade.episodes._types import StopReason, Trajectory, Turn
from spade.errors import UserError
from spade.policy._types import Generation, Message, SamplingParams, TokenPolicy
from spade.rewards import Arm, episode_return
from spade.sandbox._types import EnvFault, FaultKind

if TYPE_CHECKING:
    from spade.sandbox import EnvHandle

#: The runner's global turn cap (DESIGN §9: up to 25 turns).
DEFAULT_MAX_TURNS = 25
_WIN_TOL = 1e-9


@dataclass(frozen=True)
class EpisodeConfig:
    """Runner limits.

    ``max_active`` bounds the episodes (and env instances) alive at once. Up to
    ``env_threads`` step/tool calls of different episodes run concurrently (each is a round
    trip to its own worker process); results do not depend on it. The default is 1 because
    the sandbox is specified for one caller at a time; instances are always acquired one at
    a time on the caller's thread.
    """

    max_turns: int = DEFAULT_MAX_TURNS
    max_active: int | None = None
    env_threads: int = 1

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise UserError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.max_active is not None and self.max_active < 1:
            raise UserError(f"max_active must be >= 1, got {self.max_active}")
        if self.env_threads < 1:
            raise UserError(f"env_threads must be >= 1, got {self.env_threads}")


@dataclass(frozen=True)
class EpisodeJob:
    """One play to run: which environment, which seed, with which hint (None: unhinted)."""

    env_id: str
    seed: int
    hint: str | None = None

    @property
    def arm(self) -> Arm:
        return Arm.UNHINTED if self.hint is None else Arm.HINTED


class EnvProvider(Protocol):
    """Hands out one environment instance per episode and takes it back afterwards."""

    def acquire(self, env_id: str) -> EnvHandle: ...

    def release(self, env_id: str, handle: EnvHandle, *, broken: bool) -> None: ...


HandleFactory = Callable[[str], "EnvHandle"]


class _FreshHandles:
    """A plain factory as a provider: a new instance per episode, closed when it ends."""

    def __init__(self, factory: HandleFactory) -> None:
        self._factory = factory

    def acquire(self, env_id: str) -> EnvHandle:
        return self._factory(env_id)

    def release(self, env_id: str, handle: EnvHandle, *, broken: bool) -> None:
        with contextlib.suppress(EnvFault):
            handle.close()


def _as_provider(handles: EnvProvider | HandleFactory) -> EnvProvider:
    if hasattr(handles, "acquire") and hasattr(handles, "release"):
        return handles
    return _FreshHandles(handles)


def _reset_result(raw: Any) -> str:
    """The observation of a ``reset`` reply, checked (the validator may not have run)."""
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        raise EnvFault(FaultKind.PROTOCOL, f"reset returned {type(raw).__name__}, not (obs, info)")
    return str(raw[0])


def _step_result(raw: Any) -> tuple[str, float, bool, bool]:
    """``(observation, reward, terminated, truncated)`` of a ``step`` reply, checked."""
    if not isinstance(raw, list | tuple) or len(raw) != 5:
        raise EnvFault(FaultKind.PROTOCOL, f"step returned {type(raw).__name__}, not a 5-tuple")
    observation, value, terminated, truncated, _ = raw
    try:
        reward = float(value)
    except (TypeError, ValueError):
        reward = math.nan
    if not math.isfinite(reward):
        raise EnvFault(FaultKind.PROTOCOL, f"step returned a non-finite reward {value!r}")
    return str(observation), reward, bool(terminated), bool(truncated)


@dataclass(frozen=True)
class _Outcome:
    """What one reply did in the environment."""

    action: str | None
    calls: tuple[dict[str, Any], ...]
    feedback: list[Message]
    reward: float
    ended: bool  # the environment ended the episode
    truncated: bool  # ... by truncation rather than termination


class _Episode:
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
        self.fault = str(exc)
        self.stop = StopReason.TIMEOUT if exc.kind == FaultKind.TIMEOUT else StopReason.ENV_ERROR

    def open(self, provider: EnvProvider) -> None:
        """Get an instance and reset it."""
        try:
            self.handle = provider.acquire(self.job.env_id)
            info = self.handle.info
            self.kind = info.kind
            self.threshold = float(info.success_threshold)
            self.max_turns = max(1, min(int(info.max_turns), self.max_turns))
            self.tools = list(info.tools) if info.kind == "tool" else []
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
            won = episode_return(self.rewards) >= self.threshold - _WIN_TOL
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
        observation, reward, terminated, truncated = _step_result(self.handle.step(action))
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
            feedback.append({"role": "tool", "name": call.name, "content": str(result)})
        if answer is not None:  # the answer ends the episode, after this reply's calls ran
            observation, reward, terminated, truncated = _step_result(self.handle.step(answer))
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
            won=bool(self.turns) and total >= self.threshold - _WIN_TOL,
            stop_reason=self.stop,
            max_turns=self.max_turns,
            hint=self.job.hint,
            env_fault=self.fault,
            messages=tuple(self.messages),
        )


def run_episodes(
    policy: TokenPolicy,
    jobs: Sequence[EpisodeJob],
    handles: EnvProvider | HandleFactory,
    params: SamplingParams,
    config: EpisodeConfig | None = None,
) -> list[Trajectory]:
    """Play every job to the end; trajectories come back in the order of ``jobs``.

    Each turn step makes exactly one ``policy.generate`` call covering all active episodes.
    With ``config.max_active`` set, finished episodes are replaced by waiting jobs between
    steps (their environment instances are released first).
    """
    config = config or EpisodeConfig()
    provider = _as_provider(handles)
    list_tools = not bool(getattr(policy, "supports_tools", False))
    limit = config.max_active or max(1, len(jobs))
    pending = deque(enumerate(jobs))
    active: list[tuple[int, _Episode]] = []
    results: list[Trajectory | None] = [None] * len(jobs)
    threads = min(config.env_threads, limit)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="spade-env") if threads > 1 else None

    def each(fn: Callable[[_Episode], None], episodes: list[_Episode]) -> None:
        if pool is None or len(episodes) < 2:
            for episode in episodes:
                fn(episode)
        else:
            for _ in pool.map(fn, episodes):  # re-raises infrastructure errors here
                pass

    def finish(index: int, episode: _Episode) -> None:
        if episode.handle is not None:
            provider.release(episode.job.env_id, episode.handle, broken=episode.fault is not None)
            episode.handle = None
        results[index] = episode.trajectory()

    try:
        while pending or active:
            joining: list[tuple[int, _Episode]] = []
            while pending and len(active) + len(joining) < limit:
                index, job = pending.popleft()
                joining.append((index, _Episode(job, config.max_turns)))
            for _, episode in joining:  # sequential: providers/sandboxes load one at a time
                episode.open(provider)
            for index, episode in joining:
                episode.prime(policy, params, list_tools)
                if episode.stop is None:
                    active.append((index, episode))
                else:
                    finish(index, episode)
            if not active:
                continue
            generations = policy.generate([ep.ids for _, ep in active], params)
            if len(generations) != len(active):
                raise RuntimeError(
                    f"policy {policy.name!r} returned {len(generations)} generations "
                    f"for {len(active)} prompts"
                )
            for (_, episode), gen in zip(active, generations, strict=True):
                episode.record(gen, policy)
            each(_Episode.act, [ep for _, ep in active])
            still: list[tuple[int, _Episode]] = []
            for index, episode in active:
                episode.settle(policy, params)
                if episode.stop is None:
                    still.append((index, episode))
                else:
                    finish(index, episode)
            active = still
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        for _, episode in active:  # only on an exception: free the instances
            if episode.handle is not None:
                provider.release(episode.job.env_id, episode.handle, broken=True)
    return [t for t in results if t is not None]


def matched_jobs(env_id: str, hint: str, seeds: Sequence[int]) -> list[EpisodeJob]:
    """Hinted and unhinted jobs on the SAME seeds, interleaved pairwise (h0, u0, h1, u1, ...)."""
    if not hint or not hint.strip():
        raise UserError(f"environment {env_id!r} has no hint to play the hinted arm with")
    if not seeds:
        raise UserError("matched play needs at least one seed")
    jobs: list[EpisodeJob] = []
    for seed in seeds:
        jobs.append(EpisodeJob(env_id, int(seed), hint))
        jobs.append(EpisodeJob(env_id, int(seed), None))
    return jobs


def split_arms(trajectories: Sequence[Trajectory]) -> tuple[list[Trajectory], list[Trajectory]]:
    """``(hinted, unhinted)`` in their original order."""
    hinted = [t for t in trajectories if t.arm == Arm.HINTED]
    unhinted = [t for t in trajectories if t.arm == Arm.UNHINTED]
    return hinted, unhinted


def play_matched(
    policy: TokenPolicy,
    handles_factory: EnvProvider | HandleFactory,
    env: str,
    hint: str,
    seeds: Sequence[int],
    params: SamplingParams,
    config: EpisodeConfig | None = None,
) -> tuple[list[Trajectory], list[Trajectory]]:
    """Play ``env`` once per seed with and once without ``hint``, all in one batch.

    Seed ``i`` of the hinted arm is seed ``i`` of the unhinted arm, and both arms have
    ``len(seeds)`` plays (DESIGN §5), so regret compares like with like.
    """
    jobs = matched_jobs(env, hint, seeds)
    trajectories = run_episodes(policy, jobs, handles_factory, params, config)
    return split_arms(trajectories)
