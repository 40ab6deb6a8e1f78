"""The rollout core: execute role-tagged tickets against any token-level generator.

``Generator`` is :class:`spade.policy.TokenPolicy`: token ids in, sampled ids and their
log-probabilities out, plus the chat template's ``render``/``continuation``. A TRL run
implements it with the trainer's LIVE model (``spade.policy.HFPolicy`` over
``trainer.model``: no stale copy); an async engine (vLLM inside OpenRLHF, whose
``await llm_engine.generate(prompt_token_ids, sampling_params)`` is token in, token out)
implements it with :class:`spade.train.AsyncEngineGenerator`.

A designer ticket runs as one self-play cycle of one prompt (``spade.cycle.run_cycle``):
prompt from the memory and a corpus document, ``group_size`` designs, parse, hints,
validation in the sandbox, then every valid design is played ``agent.plays_per_arm``
times with and without its hint on the SAME seeds by the SAME policy snapshot (the
current weights, within this step). The designer's reward is computed right there, from
those matched plays, with the configured variant (``spade.rewards``); invalid designs get
the invalid penalty. Those plays only score the design; the agent trains on agent tickets.

An agent ticket plays one pool environment ``group_size`` times, unhinted, each play on
its own reset seed; the agent's reward is the episode return. Plays of a ticket whose
environment faulted carry no gradient (the designer's fault, not the agent's). Agent
tickets of every problem source (this pool, or a fixed-environment baseline's source) are
played by :func:`spade.cycle.play_groups` and become results in :meth:`Rollout._results`.

Advantages are SPADE's per-role GRPO advantages: a ticket's samples are one group,
normalised by ``spade.rewards.grouped_advantages``; zero-variance groups are counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spade.train._pool import EnvPool, PoolEnv
from spade.train._tickets import Role, Ticket

from spade.config import RunConfig
from spade.cycle import (
    CycleContext,
    CycleResult,
    CycleState,
    PlayedGroup,
    Roles,
    play_groups,
    run_cycle,
)
from spade.designer import HintSource, as_hint_source
from spade.diversity import Embedder
from spade.episodes import EpisodeConfig, EpisodeJob, Trajectory
from spade.policy import ChatPolicy, SamplingParams, TokenPolicy
from spade.rewards import GroupStats, is_zero_variance
from spade.sandbox import Sandbox
from spade.seeds import derive_seed

__all__ = ["Generator", "Rollout", "RolloutState", "Sample", "TicketResult"]

#: What the rollout generates with (token-in/token-out; see the module docstring).
Generator = TokenPolicy


@dataclass(frozen=True)
class Sample:
    """One training sequence: ``prompt_ids`` then ``completion_ids``; ``env_mask`` is 1 on
    tokens the policy sampled (trained) and 0 on environment/tool tokens (masked)."""

    ticket: str
    role: Role
    index: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    env_mask: tuple[int, ...]
    logprobs: tuple[float, ...] | None
    reward: float
    advantage: float
    env_id: str | None = None
    seed: int | None = None

    @property
    def trained_tokens(self) -> int:
        return sum(self.env_mask)


@dataclass
class RolloutState:
    """The run state a rollout reads and advances (persisted in the run store)."""

    cycle: CycleState  # memory, corpus cursor, run RNG
    pool: EnvPool


@dataclass
class TicketResult:
    ticket: Ticket
    samples: list[Sample]
    stats: GroupStats
    cycle: CycleResult | None = None  # designer tickets
    trajectories: list[Trajectory] = field(default_factory=list)  # agent tickets
    env: PoolEnv | None = None  # agent tickets: the environment played
    timing: dict[str, float] = field(default_factory=dict)

    def new_envs(self, generation: int) -> list[PoolEnv]:
        """The valid environments a designer ticket produced, as pool entries."""
        if self.cycle is None:
            return []
        return [PoolEnv(d.env_id, d.parse.source or "", d.parse.hint or "", generation, d.skill,
                        origin="designed")
                for d in self.cycle.designs if d.valid]


class Rollout:
    """Executes tickets with one generator for both roles (shared weights)."""

    def __init__(self, config: RunConfig, generator: Generator, sandbox: Sandbox,
                 embedder: Embedder, *, frozen_designer: ChatPolicy | None = None,
                 hint_writer: ChatPolicy | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.generator = generator
        self.sandbox = sandbox
        self.embedder = embedder
        self.progress = progress
        source = as_hint_source(config.designer.hint_source)
        designer = frozen_designer or generator
        if source is HintSource.EXTERNAL and hint_writer is None:
            raise ValueError("designer.hint_source external needs a hint_writer policy")
        writer = designer if source is HintSource.SELF else hint_writer
        self.roles = Roles(designer=designer, agent=generator,
                           hint_writer=writer if source is not HintSource.DESIGNER else None,
                           hint_source=source, designer_frozen=frozen_designer is not None)
        template = getattr(generator, "template", None)
        self._filler = int(getattr(template, "eot_id", 0) or 0)

    def execute(self, state: RolloutState, tickets: Sequence[Ticket]) -> list[TicketResult]:
        """Run ``tickets`` (results in the same order). Agent tickets play ``state.pool``;
        designer tickets update the memory and corpus cursor in ``state.cycle``."""
        agents = [t for t in tickets if t.role is Role.AGENT]
        done = {t.id: r for t, r in zip(agents, self._agents(state, agents), strict=True)}
        for t in tickets:
            if t.role is Role.DESIGNER:
                done[t.id] = self._designer(state, t)
        return [done[t.id] for t in tickets]

    # -- designer --------------------------------------------------------------------
    def _designer(self, state: RolloutState, ticket: Ticket) -> TicketResult:
        cfg = self.config.with_overrides(**{"designer.prompts_per_cycle": 1,
                                            "designer.designs_per_prompt": ticket.group_size})
        ctx = CycleContext(cfg, self.roles, self.sandbox, self.embedder, self.progress)
        result = run_cycle(ctx, state.cycle, ticket.ordinal)
        samples = []
        for j, d in enumerate(result.designs):
            ids, prompt = tuple(d.generation.token_ids), tuple(d.prompt_ids)
            if not prompt:
                if not result.designer_frozen:
                    raise RuntimeError("the designer policy gave no token ids; it cannot train")
                # a text-level frozen designer (an external API): a masked placeholder keeps
                # the step's sample count; nothing of it trains
                prompt, ids = tuple(self.generator.render(list(d.messages))), ()
            mask = (0 if result.designer_frozen else 1,) * len(ids)
            logprobs = d.generation.logprobs if ids else None
            samples.append(self._sample(ticket, j, prompt, ids, mask, logprobs,
                                        d.score.reward, d.advantage, d.env_id, None))
        timing = {k: float(v) for k, v in result.metrics.get("timing_s", {}).items()}
        return TicketResult(ticket, samples, result.designer_stats, cycle=result, timing=timing)

    # -- agent -----------------------------------------------------------------------
    def _agents(self, state: RolloutState, tickets: Sequence[Ticket]) -> list[TicketResult]:
        if not tickets:
            return []
        a = self.config.agent
        envs = [state.pool.pick(t.slot) for t in tickets]
        jobs = [[EpisodeJob(e.env_id, t.env_seed(j)) for j in range(t.group_size)]
                for t, e in zip(tickets, envs, strict=True)]
        plays = play_groups(self.generator, self.sandbox, {e.env_id: e.source for e in envs},
                            jobs, self.agent_params(tickets[0].step),
                            EpisodeConfig(max_turns=a.max_turns, max_active=a.max_active))
        timing = {"agent_generation_s": plays.timing["agent_generation_s"],
                  "env_s": plays.timing["env_steps_s"] + plays.timing["env_load_s"]}
        return self._results(tickets, plays.groups, envs, timing)

    def agent_params(self, step: int) -> SamplingParams:
        """The agent's sampling in ``step`` (its seed is the step's; plays' streams differ
        by the episode runner's per-play derivation)."""
        s = self.config.agent.sampling
        return SamplingParams(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k,
                              max_new_tokens=s.max_new_tokens,
                              seed=derive_seed(self.config.seed, "train-agent", step))

    def _results(self, tickets: Sequence[Ticket], groups: Sequence[PlayedGroup],
                 envs: Sequence[PoolEnv], timing: Mapping[str, float]) -> list[TicketResult]:
        """One result per agent ticket: its group's samples (a faulted group trains on
        nothing: rewards and advantages 0), one GRPO group's stats, and an equal share of
        the step's ``timing``."""
        share = {k: v / len(tickets) for k, v in timing.items()}
        out = []
        for t, group, env in zip(tickets, groups, envs, strict=True):
            rewards, advantages = group.rewards, group.trained_advantages
            samples = [self._play_sample(t, j, p, rewards[j], advantages[j])
                       for j, p in enumerate(group.trajectories)]
            zero = int(group.advantages is None or is_zero_variance(list(rewards)))
            out.append(TicketResult(t, samples, GroupStats(1, len(samples), zero),
                                    trajectories=list(group.trajectories), env=env,
                                    timing=dict(share)))
        return out

    def _play_sample(self, t: Ticket, j: int, p: Trajectory, reward: float,
                     advantage: float) -> Sample:
        n = p.prompt_len
        lps = None if p.logprobs is None else tuple(p.logprobs[n:])
        return self._sample(t, j, p.token_ids[:n], p.token_ids[n:], p.loss_mask[n:], lps,
                            reward, advantage, p.env_id, p.seed)

    def _sample(self, t: Ticket, j: int, prompt: Sequence[int], completion: Sequence[int],
                mask: Sequence[int], logprobs: Sequence[float] | None, reward: float,
                advantage: float, env_id: str | None, seed: int | None) -> Sample:
        if not completion:  # an episode that ended before the first reply: nothing to train
            completion, mask, logprobs = (self._filler,), (0,), (0.0,)
        if not prompt:  # ... or before its first prompt (the environment faulted in reset)
            prompt = (self._filler,)
        return Sample(t.id, t.role, j, tuple(prompt), tuple(completion), tuple(mask),
                      None if logprobs is None else tuple(logprobs), float(reward),
                      float(advantage), env_id, seed)


def finish_step(state: RolloutState, results: Sequence[TicketResult]) -> bool:
    """End of a step: a regeneration's valid environments become the next pool. Returns
    whether the pool changed (False also when the regeneration produced nothing valid)."""
    designers = [r for r in results if r.ticket.role is Role.DESIGNER]
    if not designers:
        return False
    new = [e for r in designers for e in r.new_envs(state.pool.generation + 1)]
    state.pool, changed = state.pool.advance(new)
    return changed


def with_group_stats(results: Sequence[TicketResult], role: Role) -> GroupStats:
    """Zero-variance accounting over every group of ``role`` in a step."""
    stats = [r.stats for r in results if r.ticket.role is role]
    return GroupStats(sum(s.n_groups for s in stats), sum(s.n_samples for s in stats),
                      sum(s.n_zero_variance for s in stats))


def replace_cycle(record: Any, step: int, **extra: Any) -> Any:
    """A cycle's store row re-stamped with the training step it belongs to."""
    return dataclasses.replace(record, cycle=step, extra={**record.extra, **extra})
