"""Tickets: a step's plan depends on the recipe and the step only, and survives JSON."""

from __future__ import annotations

import json

from spade.train import Role, Ticket, load_recipe, plan_step, plan_steps


def test_plan_has_designers_first_on_regeneration_steps() -> None:
    recipe = load_recipe("tiny")
    step0, step1 = plan_step(recipe, 0), plan_step(recipe, 1)
    assert [t.role for t in step0] == [Role.DESIGNER, Role.AGENT, Role.AGENT]
    assert [t.role for t in step1] == [Role.AGENT] * 3
    assert plan_step(recipe, 2)[0].ordinal == 1  # second regeneration's first prompt
    assert {t.slot for t in step1} == {3, 4, 5}  # agent slots rotate through the pool
    assert plan_steps(recipe, 2) == step0 + step1
    assert plan_step(recipe, 0) == step0  # deterministic


def test_ticket_round_trips_through_json() -> None:
    for ticket in plan_steps(load_recipe("tiny"), 3):
        text = ticket.to_json()
        assert json.loads(text)["role"] in ("designer", "agent")
        assert Ticket.from_json(text) == ticket
        assert Ticket.from_json(json.loads(text)) == ticket


def test_sibling_seeds_differ_and_depend_only_on_the_ticket() -> None:
    recipe = load_recipe("tiny")
    tickets = plan_steps(recipe, 4)
    seeds = [t.sample_seed(j) for t in tickets for j in range(t.group_size)]
    env_seeds = [t.env_seed(j) for t in tickets for j in range(t.group_size)]
    assert len(set(seeds)) == len(seeds) and len(set(env_seeds)) == len(env_seeds)
    assert all(0 <= s < 2**31 for s in env_seeds)
    other = load_recipe("tiny").with_overrides(**{"selfplay.seed": 1})
    assert plan_step(other, 1)[0].env_seed(0) != plan_step(recipe, 1)[0].env_seed(0)
