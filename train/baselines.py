"""Fixed-environment baselines in the shared training loop: an agent-only ticket source.

A baseline recipe (``fixed_env:``, ``method.kind: fixed_env``) plans only agent tickets (its
pool is ``fixed``, so no designer tickets). :class:`BaselineRollout` executes each agent
ticket as ONE problem drawn from the recipe's problem source (RLVE under the sliding-window
controller, Reasoning Gym, a static pool, the starter families) and plays it ``group_size``
times with the same seed, so the ticket's samples are one GRPO group of one problem.
Everything after the rollout (loss, commit, checkpoints, metrics) is the common loop's.

The problem source's state (difficulty windows, pool position) is written with every step
under ``fixed_env.state`` of the step's metrics, i.e. in the run store, in the same
transaction as the step, and so in every checkpoint's store copy; :meth:`restore` reads it
back on resume.

A backend that runs a step's tickets one at a time, in several processes (OpenRLHF), uses
the same pieces in two halves: each ticket runs on :meth:`BaselineRollout.at` (a copy of
the rollout whose source is put back to the state at the step's start, so every ticket
draws what a whole-step run draws), and the step's close folds all tickets' outcomes into
the step-start state once, in ticket order, with :func:`fold_step`, exactly as a
whole-step rollout does, before taking :func:`fixed_metrics`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spade.train._pool import PoolEnv
from spade.train._rollout import Generator, Rollout, RolloutState, TicketResult
from spade.train._tickets import Role, Ticket
from spade.train.recipe import TrainRecipe

from spade.baselines import (
    Group,
    ProblemSource,
    StepPlays,
    play_step,
    problem_source,
    source_step_metrics,
)
from spade.cycle import PlayedGroup
from spade.diversity import Embedder
from spade.episodes import EpisodeConfig
from spade.rewards import GroupStats
from spade.sandbox import Sandbox

__all__ = ["BaselineRollout", "fixed_metrics", "fold_step", "start_state"]


class BaselineRollout(Rollout):
    """Agent tickets over a fixed problem source (see the module docstring)."""

    def __init__(self, recipe: TrainRecipe, generator: Generator, sandbox: Sandbox,
                 embedder: Embedder, *, progress: Callable[[str], None] | None = None) -> None:
        if recipe.fixed_env is None:
            raise ValueError("BaselineRollout needs a recipe with a fixed_env block")
        super().__init__(recipe.selfplay, generator, sandbox, embedder, progress=progress)
        self.problems: ProblemSource = problem_source(recipe.fixed_env, recipe.seed)
        a = recipe.selfplay.agent
        self.episode = EpisodeConfig(max_turns=a.max_turns, max_active=a.max_active)
        self.last: StepPlays | None = None

    def execute(self, state: RolloutState, tickets: Sequence[Ticket]) -> list[TicketResult]:
        if any(t.role is not Role.AGENT for t in tickets):
            raise ValueError("a fixed-environment baseline has no designer tickets")
        return self._agents(state, tickets)

    def _agents(self, state: RolloutState, tickets: Sequence[Ticket]) -> list[TicketResult]:
        if not tickets:
            return []
        step, size = tickets[0].step, tickets[0].group_size
        drawn = [self.problems.problem(t.step, t.index, t.slot) for t in tickets]
        if self.progress is not None:
            self.progress(f"step {step}: {len(drawn)} {self.problems.name} problems x {size}")
        plays = play_step(self.generator, self.sandbox, self.problems, drawn, size,
                          self.agent_params(step), self.episode)
        self.last = plays
        groups = [PlayedGroup(g.trajectories, g.returns, g.advantages) for g in plays.groups]
        envs = [PoolEnv(p.env_id, self.problems.source(p.env_id), "", 0) for p in drawn]
        timing = {k: v for k, v in plays.timing.items() if k.endswith("_s")}
        return self._results(tickets, groups, envs, timing)

    def fixed_metrics(self, step: int) -> dict[str, Any]:
        """The baseline's own metrics of the last step, with the source state to resume."""
        if self.last is None:
            raise RuntimeError("no step was rolled out yet")
        return fixed_metrics(self.problems, step, self.last)

    def restore(self, metrics: dict[str, Any]) -> None:
        """Continue from the source state a committed step's metrics hold."""
        self.problems.restore(committed_state(metrics))

    def at(self, state: Mapping[str, Any]) -> BaselineRollout:
        """A copy whose problem source starts from ``state`` (the state at the start of
        the step a ticket belongs to). Each concurrently running ticket gets its own, so
        one ticket's outcomes never move another's draw."""
        twin = copy.copy(self)
        twin.problems = copy.deepcopy(self.problems)
        twin.problems.restore(state)
        twin.last = None
        return twin


def committed_state(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The problem source's state a committed step's metrics line holds."""
    block = metrics.get("fixed_env")
    if not isinstance(block, dict) or "state" not in block:
        raise ValueError("the last committed step holds no fixed-environment state")
    return dict(block["state"])


def start_state(recipe: TrainRecipe, last: Mapping[str, Any] | None) -> dict[str, Any]:
    """The source state the next step starts from: a fresh source's before step 0, else
    the one the last committed step's metrics (``last``) hold."""
    if recipe.fixed_env is None:
        raise ValueError("not a fixed-environment recipe")
    if last is None:
        return problem_source(recipe.fixed_env, recipe.seed).state()
    return committed_state(last)


def fixed_metrics(problems: ProblemSource, step: int, plays: StepPlays) -> dict[str, Any]:
    """A step's ``fixed_env`` metrics block: the source's own numbers and its state."""
    own = source_step_metrics(step, problems, plays)
    names: tuple[str, ...] = ("solve_rate_by_env", "difficulty", "pool", "problems_drawn")
    keep: dict[str, Any] = {k: own[k] for k in names if k in own}
    return {"kind": problems.name, **keep, "state": problems.state()}


def fold_step(problems: ProblemSource, results: Sequence[TicketResult]) -> StepPlays:
    """Fold a step's ticket results, executed one ticket at a time, into ``problems`` (at
    the step's start state), as a whole-step rollout does: every ticket's problem is drawn
    first (the draws must equal what each ticket played), then each group that had no
    environment fault is observed, in ticket order, once."""
    ordered = sorted(results, key=lambda r: r.ticket.index)
    if any(r.ticket.role is not Role.AGENT for r in ordered):
        raise ValueError("a fixed-environment baseline has no designer tickets")
    drawn = [problems.problem(r.ticket.step, r.ticket.index, r.ticket.slot) for r in ordered]
    groups = []
    for r, problem in zip(ordered, drawn, strict=True):
        played = {(t.env_id, t.seed) for t in r.trajectories}
        if played != {(problem.env_id, problem.seed)}:
            raise RuntimeError(f"ticket {r.ticket.id} played {sorted(played)}, but its draw "
                               f"at the step's start is {problem}: the executors disagree")
        faulted = any(t.env_fault for t in r.trajectories)
        if not faulted:
            problems.observe(problem, [t.won for t in r.trajectories])
        groups.append(Group(problem, tuple(r.trajectories),
                            tuple(t.total_return for t in r.trajectories),
                            None if faulted else tuple(s.advantage for s in r.samples)))
    stats = GroupStats(len(groups), sum(len(g.trajectories) for g in groups),
                       sum(r.stats.n_zero_variance for r in ordered))
    return StepPlays(tuple(groups), stats, {})
