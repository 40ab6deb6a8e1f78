"""The multi-turn episode runner: a token-level policy plays sandboxed environments.

Design points:

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

from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from spade.episodes._episode import Episode
from spade.episodes._provider import EnvProvider, HandleFactory, as_provider
from spade.episodes._types import EpisodeConfig, EpisodeJob, Trajectory
from spade.errors import UserError
from spade.policy._types import SamplingParams, TokenPolicy
from spade.rewards import Arm
from spade.seeds import derive_seed


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
    provider = as_provider(handles)
    list_tools = not bool(getattr(policy, "supports_tools", False))
    limit = config.max_active or max(1, len(jobs))
    pending = deque(enumerate(jobs))
    active: list[tuple[int, Episode]] = []
    results: list[Trajectory | None] = [None] * len(jobs)
    threads = min(config.env_threads, limit)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="spade-env") if threads > 1 else None

    def each(fn: Callable[[Episode], None], episodes: list[Episode]) -> None:
        if pool is None or len(episodes) < 2:
            for episode in episodes:
                fn(episode)
        else:
            for _ in pool.map(fn, episodes):  # re-raises infrastructure errors here
                pass

    def finish(index: int, episode: Episode) -> None:
        if episode.handle is not None:
            provider.release(episode.job.env_id, episode.handle, broken=episode.fault is not None)
            episode.handle = None
        results[index] = episode.trajectory()

    try:
        while pending or active:
            joining: list[tuple[int, Episode]] = []
            while pending and len(active) + len(joining) < limit:
                index, job = pending.popleft()
                joining.append((index, Episode(job, config.max_turns)))
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
            turn_params = [_turn_params(params, ep) for _, ep in active]
            generations = policy.generate([ep.ids for _, ep in active], turn_params)
            if len(generations) != len(active):
                raise RuntimeError(
                    f"policy {policy.name!r} returned {len(generations)} generations "
                    f"for {len(active)} prompts"
                )
            for (_, episode), gen in zip(active, generations, strict=True):
                episode.record(gen, policy)
            each(Episode.act, [ep for _, ep in active])
            still: list[tuple[int, Episode]] = []
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


def _turn_params(params: SamplingParams, episode: Episode) -> SamplingParams:
    """This turn's own seed: (base seed, environment, instance seed, arm, turn, and the
    job's ``sample`` when set), so plays, arms and turns never share a random stream,
    whatever else is being played."""
    if params.seed is None:
        return params
    job = episode.job
    extra = ("sample", job.sample) if job.sample else ()
    seed = derive_seed(params.seed, "turn", job.env_id, job.seed, str(job.arm),
                       len(episode.turns), *extra)
    return replace(params, seed=seed)


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
    ``len(seeds)`` plays, so regret compares like with like.
    """
    jobs = matched_jobs(env, hint, seeds)
    trajectories = run_episodes(policy, jobs, handles_factory, params, config)
    return split_arms(trajectories)
