"""Agent tickets play the same whatever the problem source: a SPADE rollout over its pool
(bundled starters) and a fixed-environment baseline (the starter families) give exactly
the records in ``agent_play_records.json`` (recorded from the rollouts before they shared
one play function), with the real sandbox and a scripted policy that honours seeds."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from spade.train import load_recipe
from spade.train._pool import initial_pool
from spade.train._rollout import Rollout, RolloutState, TicketResult
from spade.train._tickets import Role, Ticket
from spade.train.baselines import BaselineRollout

from spade.cycle import fresh_state
from spade.diversity import LexicalEmbedder
from spade.policy import ScriptedPolicy
from spade.sandbox import Sandbox, SandboxLimits

RECORDS = Path(__file__).with_name("agent_play_records.json")


def _respond(messages: list[dict[str, Any]], rng: random.Random) -> str:
    """A guess drawn from the request's own stream: equal seeds, equal replies."""
    return f"\\boxed{{{rng.choice(['1', '2', '3', 'odd', 'even', 'yes', 'no'])}}}"


def _digest(values: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(list(values)).encode()).hexdigest()[:16]


def _records(results: Sequence[TicketResult]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        out.append({
            "ticket": r.ticket.id, "env": r.env.env_id if r.env else None,
            "origin": r.env.origin if r.env else None,
            "stats": [r.stats.n_groups, r.stats.n_samples, r.stats.n_zero_variance],
            "timing_keys": sorted(r.timing),
            "samples": [[s.index, _digest(s.prompt_ids), _digest(s.completion_ids),
                         _digest(s.env_mask), None if s.logprobs is None
                         else _digest([round(x, 6) for x in s.logprobs]),
                         round(s.reward, 6), round(s.advantage, 6), s.env_id, s.seed]
                        for s in r.samples],
            "plays": [[t.env_id, t.seed, round(t.total_return, 6), t.won, str(t.stop_reason)]
                      for t in r.trajectories],
        })
    return out


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=10.0)) as sb:
        yield sb


def current(sandbox: Sandbox) -> dict[str, Any]:
    """Both rollouts' agent tickets, as records."""
    recipe = load_recipe("tiny").with_overrides(**{
        "selfplay.agent.max_turns": 3, "selfplay.designer.use_corpus": False})
    cfg = recipe.selfplay
    policy = ScriptedPolicy(_respond)
    spade = Rollout(cfg, policy, sandbox, LexicalEmbedder())
    state = RolloutState(fresh_state(cfg), initial_pool("games", ("number_guess", "divisor_sum")))
    tickets = [Ticket(Role.AGENT, 0, k, cfg.seed, 3, slot=k) for k in range(3)]
    out = {"spade": _records(spade.execute(state, tickets))}
    base = recipe.with_overrides(**{
        "method": {"label": "families", "kind": "fixed_env"}, "pool.source": "fixed",
        "fixed_env": {"kind": "families", "families": ["sum_numbers", "letter_at"]}})
    fixed = BaselineRollout(base, policy, sandbox, LexicalEmbedder())
    tickets = [Ticket(Role.AGENT, s, k, cfg.seed, 3, slot=2 * s + k)
               for s in range(2) for k in range(2)]
    out["fixed_env"] = [rec for s in range(2)
                        for rec in _records(fixed.execute(state, tickets[2 * s:2 * s + 2]))]
    return out


@pytest.mark.bwrap
def test_agent_plays_give_the_recorded_records(sandbox: Sandbox) -> None:
    assert current(sandbox) == json.loads(RECORDS.read_text(encoding="utf-8"))
