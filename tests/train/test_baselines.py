"""A baseline step folded from ticket results holds what the whole-step rollout holds."""

from __future__ import annotations

from spade.train._rollout import Sample, TicketResult
from spade.train._tickets import Role, Ticket
from spade.train.baselines import fold_step

from spade.baselines import StepPlays
from spade.baselines._problems import FamilyProblems
from spade.episodes import StopReason, Trajectory
from spade.rewards import Arm, GroupStats


def _play(env_id: str, seed: int, total: float, fault: str | None = None) -> Trajectory:
    return Trajectory(env_id, seed, Arm.UNHINTED, "game", (1, 2), (0, 1), None, 1, (),
                      (total,), total, total >= 1.0,
                      StopReason.ENV_ERROR if fault else StopReason.TERMINATED, 2,
                      env_fault=fault)


def _folded(fault: str | None) -> StepPlays:
    problems = FamilyProblems((), seed=3)
    p = FamilyProblems((), seed=3).problem(0, 0, 0)
    ticket = Ticket(Role.AGENT, 0, 0, 3, 2, slot=0)
    plays = [_play(p.env_id, p.seed, 1.0), _play(p.env_id, p.seed, -0.5, fault)]
    # the samples train on nothing when a play faulted: rewards and advantages 0
    trained = (0.0, 0.0) if fault else (1.0, -0.5)
    samples = [Sample(ticket.id, Role.AGENT, j, (1,), (2,), (1,), None, trained[j],
                      0.0 if fault else (0.75, -0.75)[j]) for j in range(2)]
    result = TicketResult(ticket, samples, GroupStats(1, 2, int(fault is not None)),
                          trajectories=plays)
    return fold_step(problems, [result])


def test_a_folded_group_holds_the_plays_returns_faulted_or_not() -> None:
    clean, faulted = _folded(None).groups[0], _folded("RuntimeError: boom").groups[0]
    assert clean.returns == faulted.returns == (1.0, -0.5)
    assert clean.advantages == (0.75, -0.75) and faulted.advantages is None
