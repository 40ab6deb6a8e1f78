"""One self-play cycle: design, validate, play both arms, reward both roles.

Corpus documents and a memory snapshot (each switchable off) ground P designer prompts;
G designs per prompt come from ONE batched generation call. Parsed designs get their hints
(``hint_source``), are validated in the sandbox with the hint (a leaking hint is invalid),
and every valid environment is played k times with and k times without the hint on the
same seeds. All plays of the cycle run through one episode runner, so each turn step is one
batched generation over every active episode of every environment. Seeds derive from
(run seed, cycle, design index, play index); the only RNG carried between cycles is
``CycleState.rng`` (memory and few-shot sampling), which the run store persists.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from spade.config import RunConfig
from spade.corpus import Document
from spade.cycle import _setup
from spade.cycle._fair_play import unfair_play
from spade.cycle._outcome import cycle_metrics, memory_entries, records
from spade.cycle._pool import HandlePool
from spade.cycle._replay import Replayer
from spade.cycle._types import (
    PARSE,
    PLAY_FAULT,
    UNFAIR_PLAY,
    VALID,
    AgentSample,
    CycleResult,
    CycleState,
    DesignSample,
)
from spade.designer import (
    HINT_PARAMS,
    DesignParse,
    HintSource,
    Prefill,
    as_prefill,
    build_designer_messages,
    bundled_examples,
    can_prefill,
    obtain_hints,
    parse_design,
    prefill_text,
    with_prefill,
)
from spade.diversity import Embedder, diversity_report
from spade.episodes import EpisodeConfig, EpisodeJob, Trajectory, env_facts, run_episodes
from spade.errors import UserError
from spade.policy import Generation, Message, TokenPolicy
from spade.rewards import AdvantageConfig, Arm, DesignerScore, agent_groups, grouped_advantages
from spade.sandbox import EnvFault, Sandbox
from spade.seeds import derive_seed
from spade.validate import Verdict, validate_batch

Progress = Callable[[str], None]


@dataclass
class CycleContext:
    """The long-lived parts a cycle uses (built once per run by the run loop or trainer)."""

    config: RunConfig
    roles: _setup.Roles
    sandbox: Sandbox
    embedder: Embedder
    progress: Progress | None = None

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)


@dataclass(frozen=True)
class _Prompt:
    index: int
    skill: str
    doc: Document | None
    messages: list[Message]  # ending in the prefilled assistant opening, if any
    prefill: str = ""


@dataclass(frozen=True)
class _Played:
    env_id: str
    hinted: list[Trajectory]
    unhinted: list[Trajectory]
    threshold: float
    #: The design's source (the regret guard replays plays in a fresh worker of it).
    source: str = ""


def _prompts(ctx: CycleContext, state: CycleState, cycle: int) -> list[_Prompt]:
    d = ctx.config.designer
    skills = d.skill_list
    out = []
    for i in range(d.prompts_per_cycle):
        skill = skills[(cycle * d.prompts_per_cycle + i) % len(skills)]
        doc = state.sampler.sample(1)[0] if (d.use_corpus and state.sampler) else None
        positives: list[Any] = []
        negatives: list[Any] = []
        if d.use_memory and len(state.memory):
            shown = state.memory.sample(d.memory_positives, state.rng,
                                        k_negative=d.memory_negatives)
            positives, negatives = list(shown.positives), list(shown.negatives)
        examples = bundled_examples(d.setting, d.few_shot_examples, rng=state.rng, skill=skill)
        messages = build_designer_messages(
            d.setting, skill, doc, positives, negatives, examples, d.difficulty,
            max_document_chars=d.max_document_chars,
        )
        prefix = prefill_text(d.prefill, d.setting, skill)
        out.append(_Prompt(i, skill, doc, with_prefill(messages, prefix), prefix))
    return out


def _generate(policy: Any, conversations: list[list[Message]], params: Any
              ) -> tuple[list[tuple[int, ...]], list[Generation]]:
    """Token-level when the policy can (ids kept for training), else text-level."""
    if isinstance(policy, TokenPolicy):
        prompts = [policy.render(c) for c in conversations]
        return [tuple(p) for p in prompts], policy.generate(prompts, params)
    return [() for _ in conversations], policy.chat(conversations, params)


def _validate(ctx: CycleContext, designs: Sequence[DesignParse], cycle: int
              ) -> list[Verdict | None]:
    """Verdicts of the parsed designs (None for the others), a few validated at a time,
    each on its own seeds (derived like the plays' seeds, so never the same twice)."""
    cfg = _setup.validation_config(ctx.config)
    todo = [k for k, d in enumerate(designs) if d.ok and d.source is not None]
    valid = 0

    def progress(n: int, verdict: Verdict) -> None:
        nonlocal valid
        valid += verdict.valid
        if n % max(1, len(todo) // 4) == 0 or n == len(todo):
            ctx.say(f"validated {n}/{len(todo)}, {valid} valid")

    found = validate_batch([(designs[k].source or "", designs[k].hint) for k in todo],
                           sandbox=ctx.sandbox, config=cfg,
                           concurrency=ctx.config.validation.concurrency, progress=progress,
                           seeds=[derive_seed(ctx.config.seed, "validate", cycle, k, bits=31)
                                  for k in todo])
    verdicts: list[Verdict | None] = [None] * len(designs)
    for k, verdict in zip(todo, found, strict=True):
        verdicts[k] = verdict
    return verdicts


def _play(ctx: CycleContext, cycle: int, envs: dict[str, tuple[int, str, str]],
          timing: dict[str, float]) -> dict[str, _Played]:
    """Play every env (id -> (design index, source, hint)) in both arms on matched seeds."""
    cfg = ctx.config
    k = cfg.agent.plays_per_arm
    seeds = {env_id: [derive_seed(cfg.seed, "play", cycle, index, i, bits=31) for i in range(k)]
             for env_id, (index, _, _) in envs.items()}
    # Round-robin over environments, so the active episodes spread over all of them and
    # each environment needs only a few instances at once.
    jobs = [EpisodeJob(env_id, seeds[env_id][i], hint if arm == Arm.HINTED else None)
            for i in range(k) for env_id, (_, _, hint) in envs.items()
            for arm in (Arm.HINTED, Arm.UNHINTED)]
    agent_seed = derive_seed(cfg.seed, "agent", cycle)  # each turn of each play derives its own
    params = _setup.sampling_params(cfg.agent.sampling, agent_seed)
    episode_cfg = EpisodeConfig(max_turns=cfg.agent.max_turns, max_active=cfg.agent.max_active)
    began = time.perf_counter()
    with HandlePool(ctx.sandbox, {e: src for e, (_, src, _) in envs.items()},
                    answer_delays=_answer_delays(cfg),
                    seed=derive_seed(cfg.seed, "answer delays", cycle)) as pool:
        if ctx.roles.prepare_agent is not None and envs:
            ctx.roles.prepare_agent(pool, [(e, h, seeds[e]) for e, (_, _, h) in envs.items()])
        ctx.say(f"playing {len(jobs)} episodes on {len(envs)} environments")
        trajectories = run_episodes(ctx.roles.agent, jobs, pool, params, episode_cfg)
        infos = {e: pool.info(e) for e in envs}
        timing["env_steps_s"] = pool.env_seconds
        timing["env_load_s"] = pool.load_seconds
        timing["env_steps"] = pool.env_steps
        timing["env_loads"] = pool.loads
    timing["play_s"] = time.perf_counter() - began
    timing["agent_generation_s"] = max(
        0.0, timing["play_s"] - pool.env_seconds - pool.load_seconds)
    out = {}
    for env_id, info in infos.items():
        out[env_id] = _Played(env_id, [], [], _threshold(info), envs[env_id][1])
    for t in trajectories:
        (out[t.env_id].hinted if t.arm == Arm.HINTED else out[t.env_id].unhinted).append(t)
    return out


def _answer_delays(cfg: RunConfig) -> tuple[float, float]:
    """The range training's instances draw their answer latency from: the hint audit's."""
    delays = _setup.validation_config(cfg).audit_delays_s
    return min(lo for lo, _ in delays), max(hi for _, hi in delays)


def _threshold(info: Any) -> float:
    """The success threshold the plays were judged by (the runner's default when the
    environment never loaded or reports none it could use)."""
    try:
        return env_facts(info)[1] if info is not None else 1.0
    except EnvFault:
        return 1.0


@dataclass
class _Designs:
    """What the designer produced this cycle, one entry per design (prompt-major)."""

    prompts: list[Any]
    conversations: list[list[Message]]
    env_ids: list[str]
    prompt_ids: list[tuple[int, ...]]
    generations: list[Generation]
    parses: list[Any]


def _design(ctx: CycleContext, state: CycleState, cycle: int, timing: dict[str, Any]
            ) -> _Designs:
    """Step 1: build the designer prompts and sample G designs per prompt."""
    cfg, d = ctx.config, ctx.config.designer
    G = d.designs_per_prompt
    ctx.say(f"designing {d.prompts_per_cycle} x {G} environments")
    if as_prefill(d.prefill) is not Prefill.NONE and not can_prefill(ctx.roles.designer):
        raise UserError(f"designer.prefill {d.prefill}: the designer policy "
                        f"{ctx.roles.designer.name!r} cannot continue a prefilled reply; "
                        "set designer.prefill: none")
    prompts = _prompts(ctx, state, cycle)
    conversations = [p.messages for p in prompts for _ in range(G)]
    t = time.perf_counter()
    params = [  # one seed per design, so the G copies of a prompt differ
        _setup.sampling_params(d.sampling, derive_seed(cfg.seed, "designer", cycle, p.index, g))
        for p in prompts for g in range(G)
    ]
    prompt_ids, generations = _generate(ctx.roles.designer, conversations, params)
    timing["designer_generation_s"] = time.perf_counter() - t
    env_ids = [f"c{cycle:04d}-p{i // G:02d}-d{i % G:02d}" for i in range(len(conversations))]
    prefixes = [p.prefill for p in prompts for _ in range(G)]
    parses = [parse_design(prefix + g.text,
                           require_hint=ctx.roles.hint_source is HintSource.DESIGNER)
              for prefix, g in zip(prefixes, generations, strict=True)]
    return _Designs(prompts, conversations, env_ids, prompt_ids, generations, parses)


def _hints(ctx: CycleContext, designs: _Designs, cycle: int, timing: dict[str, Any]) -> None:
    """Step 2: attach hints written by the configured hint source (in place)."""
    cfg, roles = ctx.config, ctx.roles
    t = time.perf_counter()
    if roles.hint_source is not HintSource.DESIGNER:
        ctx.say(f"writing hints ({roles.hint_source}) for "
                f"{sum(1 for p in designs.parses if p.source is not None and p.ok)} designs")
    hint_params = dataclasses.replace(
        HINT_PARAMS, seed=derive_seed(cfg.seed, "hints", cycle),
        max_new_tokens=cfg.designer.hint_max_new_tokens)
    designs.parses = obtain_hints(designs.parses, roles.hint_source, roles.hint_writer,
                                  setting=cfg.designer.setting, params=hint_params)
    timing["hint_generation_s"] = time.perf_counter() - t


def _outcomes(ctx: CycleContext, env_ids: list[str], verdicts: list[Verdict | None],
              played: dict[str, _Played]) -> tuple[list[str], list[DesignerScore], list[str]]:
    """Step 5: each design's outcome (parse/stage/play fault/unfair play/valid), designer
    score and a note saying why its plays earned no regret."""
    reward = _setup.designer_reward(ctx.config)
    outcomes: list[str] = []
    scores: list[DesignerScore] = []
    notes: list[str] = []
    for env_id, verdict in zip(env_ids, verdicts, strict=True):
        note = None
        if verdict is None:
            outcome = PARSE
        elif not verdict.valid:
            outcome = str(verdict.stage)
        elif any(tr.env_fault for tr in played[env_id].hinted + played[env_id].unhinted):
            outcome = PLAY_FAULT
        else:
            note = _guard(ctx, played[env_id])
            outcome = VALID if note is None else UNFAIR_PLAY
        outcomes.append(outcome)
        notes.append(note or "")
        if outcome in (VALID, UNFAIR_PLAY):
            p = played[env_id]
            unhinted = [tr.total_return for tr in p.unhinted]
            hinted = unhinted if note else [tr.total_return for tr in p.hinted]
            scores.append(reward.score(hinted, unhinted, success_threshold=p.threshold))
        else:
            scores.append(reward.invalid(outcome))
    if any(notes):
        ctx.say(f"{sum(map(bool, notes))} design(s) played unfairly: no regret")
    return outcomes, scores, notes


def _guard(ctx: CycleContext, p: _Played) -> str | None:
    """The regret guard on one design's plays, replaying in a fresh worker as it asks."""
    if not p.source:
        return unfair_play(p.hinted, p.unhinted)
    with Replayer(ctx.sandbox, p.source, p.threshold, env_id=p.env_id,
                  answer_delays=_answer_delays(ctx.config),
                  seed=derive_seed(ctx.config.seed, "replay delays", p.env_id)) as replay:
        return unfair_play(p.hinted, p.unhinted, replay)


def _design_samples(designs: _Designs, verdicts: list[Verdict | None], outcomes: list[str],
                    scores: list[DesignerScore], notes: list[str], G: int
                    ) -> tuple[tuple[DesignSample, ...], Any]:
    """Step 6: designer GRPO advantages (one group per prompt) and the design samples."""
    prompts = designs.prompts
    designer_adv = grouped_advantages(
        {i: [s.reward for s in scores[i * G:(i + 1) * G]] for i in range(len(prompts))})
    doc_ids = [None if p.doc is None else p.doc.id for p in prompts]
    samples = tuple(
        DesignSample(
            env_id=designs.env_ids[i], prompt_index=i // G, skill=prompts[i // G].skill,
            doc_id=doc_ids[i // G],
            messages=tuple(designs.conversations[i]), prompt_ids=designs.prompt_ids[i],
            generation=designs.generations[i], parse=designs.parses[i], verdict=verdicts[i],
            outcome=outcomes[i], score=scores[i],
            advantage=designer_adv.advantages[i // G][i % G], note=notes[i],
        )
        for i in range(len(designs.conversations))
    )
    return samples, designer_adv.stats


def _agent_samples(ctx: CycleContext, samples: Sequence[DesignSample],
                   played: dict[str, _Played]) -> tuple[list[AgentSample], Any]:
    """Step 7: agent advantages (unhinted returns; hinted too if configured) per play."""
    cfg = ctx.config
    valid_ids = [s.env_id for s in samples if s.valid]
    adv_cfg = AdvantageConfig(train_on_hinted=cfg.agent.train_on_hinted)
    agent_adv = adv_cfg.apply(agent_groups(
        {e: [tr.total_return for tr in played[e].unhinted] for e in valid_ids},
        {e: [tr.total_return for tr in played[e].hinted] for e in valid_ids},
        train_on_hinted=cfg.agent.train_on_hinted))
    plays: list[AgentSample] = []
    for env_id, p in played.items():
        for arm, trajectories in ((Arm.HINTED, p.hinted), (Arm.UNHINTED, p.unhinted)):
            advantages = agent_adv.advantages.get((env_id, arm))
            for i, tr in enumerate(trajectories):
                plays.append(AgentSample(tr, i, None if advantages is None else advantages[i]))
    return plays, agent_adv.stats


def run_cycle(ctx: CycleContext, state: CycleState, cycle: int) -> CycleResult:
    """Run cycle ``cycle``; updates ``state`` (memory, corpus cursor, rng) in place.

    Steps: design -> hints -> validate -> play (both arms, matched seeds) -> outcomes and
    designer scores -> designer advantages -> agent advantages -> diversity, memory and
    records -> metrics.
    """
    cfg, roles = ctx.config, ctx.roles
    G = cfg.designer.designs_per_prompt
    began = time.perf_counter()
    timing: dict[str, Any] = {}

    designs = _design(ctx, state, cycle, timing)
    _hints(ctx, designs, cycle, timing)
    t = time.perf_counter()
    ctx.say(f"validating {sum(p.ok for p in designs.parses)} parsed designs")
    verdicts = _validate(ctx, designs.parses, cycle)
    timing["validation_s"] = time.perf_counter() - t
    playable = {designs.env_ids[i]: (i, p.source or "", p.hint or "")
                for i, (p, v) in enumerate(zip(designs.parses, verdicts, strict=True))
                if v is not None and v.valid}
    played = _play(ctx, cycle, playable, timing)

    t = time.perf_counter()
    outcomes, scores, notes = _outcomes(ctx, designs.env_ids, verdicts, played)
    samples, designer_stats = _design_samples(designs, verdicts, outcomes, scores, notes, G)
    plays, agent_stats = _agent_samples(ctx, samples, played)

    valid = [s for s in samples if s.valid]
    t_div = time.perf_counter()
    report, embeddings = diversity_report([s.parse.source or "" for s in valid], ctx.embedder,
                                          hints=[s.parse.hint or "" for s in valid])
    timing["diversity_s"] = time.perf_counter() - t_div
    for entry in memory_entries(cycle, valid, played_first_obs(played), embeddings):
        state.memory.add(entry)
    env_records, play_records = records(cycle, samples, plays)
    timing["bookkeeping_s"] = time.perf_counter() - t - timing["diversity_s"]
    timing["cycle_s"] = time.perf_counter() - began
    metrics = cycle_metrics(cycle, cfg, samples, plays, report, designer_stats,
                            agent_stats, len(state.memory), timing)
    return CycleResult(
        cycle=cycle, designs=samples, plays=tuple(plays), designer_stats=designer_stats,
        agent_stats=agent_stats, designer_frozen=roles.designer_frozen, metrics=metrics,
        env_records=env_records, play_records=play_records,
    )


def played_first_obs(played: dict[str, _Played]) -> dict[str, str]:
    """The first observation each environment showed its (unhinted) agent."""
    out = {}
    for env_id, p in played.items():
        if p.unhinted and len(p.unhinted[0].messages) > 1:
            out[env_id] = str(p.unhinted[0].messages[1].get("content", ""))
    return out
