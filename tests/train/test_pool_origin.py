"""The agent pool's origins and top-up rule, and the rollout's prefilled designer tickets:
the real sandbox, validator and episode runner, with a scripted (seed-honouring) policy
that continues the prefilled skeleton like a model would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from _prefilled_design import PREFILLED_REPLY
from spade.train import load_recipe
from spade.train._metrics import step_metrics
from spade.train._pool import EnvPool, PoolEnv, initial_pool
from spade.train._rollout import Rollout, RolloutState, finish_step
from spade.train._tickets import Role, Ticket

from spade.cycle import fresh_state
from spade.designer import env_class_name, prefill_text
from spade.diversity import LexicalEmbedder
from spade.policy import ScriptedPolicy
from spade.policy._types import split_prefill
from spade.sandbox import Sandbox, SandboxLimits

BODY = PREFILLED_REPLY

def _designed(k: int) -> PoolEnv:
    return PoolEnv(f"c0000-p00-d{k:02d}", "src", "hint", 1, "logic", origin="designed")


def test_old_pool_json_loads_with_origins() -> None:
    old = {"generation": 1, "envs": [
        {"env_id": "g0000-number_guess", "source": "s", "hint": "h", "generation": 0,
         "skill": "logic"},
        {"env_id": "c0000-p00-d01", "source": "s", "hint": "h", "generation": 1,
         "skill": "logic"}]}
    pool = EnvPool.from_json(old)
    assert [e.origin for e in pool.envs] == ["starter", "designed"]
    assert pool.min_designed == 0 and pool.starters == ()
    assert pool.by_origin() == {"designed": 1, "starter": 1}
    with pytest.raises(ValueError, match="unknown pool origin"):
        PoolEnv.from_json({**old["envs"][0], "origin": "alien"})


def test_top_up_rule_and_checkpoint_round_trip() -> None:
    plain = initial_pool("games")
    assert {e.origin for e in plain.envs} == {"starter"} and plain.to_json().keys() == {
        "generation", "envs"}  # today's behaviour and state layout when off
    assert plain.advance([_designed(0)])[0].envs == (_designed(0),)
    pool = initial_pool("games", min_designed=3)
    assert len(pool.starters) == 3
    kept, changed = pool.advance([])
    assert kept is pool and not changed  # nothing valid: the pool is kept
    one, changed = pool.advance([_designed(0)])
    assert changed and one.generation == 1 and len(one.envs) == 3
    assert one.by_origin() == {"designed": 1, "starter": 2}
    assert all(e.generation == 0 and e.env_id.startswith("g0000-")
               for e in one.envs if e.origin == "starter")
    two, _ = one.advance([_designed(1)])
    assert {e.env_id for e in two.envs if e.origin == "starter"} != {
        e.env_id for e in one.envs if e.origin == "starter"}  # starters taken in turn
    full, _ = two.advance([_designed(k) for k in range(4)])
    assert full.by_origin() == {"designed": 4, "starter": 0}
    assert EnvPool.from_json(json.loads(json.dumps(one.to_json()))) == one


def test_pool_saved_with_seed_origins_reads_as_starters() -> None:
    pool = initial_pool("games", min_designed=3).advance([_designed(0)])[0]
    saved = pool.to_json()
    old = {**saved, "seeds": saved.pop("starters"),
           "envs": [{**e, "origin": "seed" if e["origin"] == "starter" else e["origin"]}
                    for e in saved["envs"]]}
    old.pop("starters", None)
    assert EnvPool.from_json(old) == pool


def test_recipe_field_is_typed() -> None:
    recipe = load_recipe("tiny")
    assert recipe.pool.min_designed == 0
    assert recipe.with_overrides(**{"pool.min_designed": 2}).pool.min_designed == 2
    with pytest.raises(Exception, match="min_designed"):
        recipe.with_overrides(**{"pool.min_designed": -1})


def _respond(messages: list[dict[str, Any]]) -> str:
    last = messages[-1]
    if last["role"] == "assistant":  # a prefilled design: continue the skeleton
        return BODY
    if "Is " in str(last.get("content")):
        return "\\boxed{odd}"
    return "\\boxed{1}"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as sb:
        yield sb


@pytest.mark.bwrap
def test_prefilled_designer_ticket_trains_only_the_completion(sandbox: Sandbox) -> None:
    recipe = load_recipe("tiny").with_overrides(**{
        "selfplay.designer.prefill": "skeleton", "selfplay.designer.use_corpus": False,
        "selfplay.designer.skills": ["logic"], "pool.min_designed": 3,
        "selfplay.designer.sampling.max_new_tokens": 2000})
    cfg = recipe.selfplay
    policy = ScriptedPolicy(_respond)
    rollout = Rollout(cfg, policy, sandbox, LexicalEmbedder())
    state = RolloutState(fresh_state(cfg), initial_pool("games", ("number_guess",),
                                                        min_designed=3))
    tickets = [Ticket(Role.DESIGNER, 0, 0, cfg.seed, 2, ordinal=0),
               Ticket(Role.AGENT, 0, 1, cfg.seed, 2, slot=0)]
    results = rollout.execute(state, tickets)
    designer, agent = results
    prefix = prefill_text("skeleton", "games", "logic")
    assert env_class_name("logic") in prefix
    for d, s in zip(designer.cycle.designs, designer.samples, strict=True):
        assert d.valid, d.outcome
        assert split_prefill(d.messages)[1] == prefix and d.reply == prefix + BODY
        assert d.parse.source.startswith("import re") and "class LogicEnv(TextEnv)" in (
            d.parse.source)
        assert policy.decode(s.prompt_ids).endswith("assistant\n" + prefix)  # prompt ids
        assert s.completion_ids == d.generation.token_ids  # only the continuation
        assert len(s.env_mask) == len(s.completion_ids) == len(s.logprobs or ())
        assert set(s.env_mask) == {1}
        assert policy.decode(s.completion_ids).startswith("Name the last digit")
    changed = finish_step(state, results)
    assert changed and state.pool.by_origin() == {"designed": 2, "starter": 1}
    line = step_metrics(0, state.pool, changed, results, 1.0)
    assert line["agent"]["plays_by_origin"] == {"designed": 0, "starter": 2}
    assert line["pool"]["by_origin"] == {"designed": 2, "starter": 1}
    assert line["designer"]["designs"] == 2 and line["designer"]["valid"] == 2
    assert agent.env is not None and agent.env.origin == "starter"
    after = rollout.execute(state, [Ticket(Role.AGENT, 1, 0, cfg.seed, 2, slot=0),
                                    Ticket(Role.AGENT, 1, 1, cfg.seed, 2, slot=2)])
    line = step_metrics(1, state.pool, False, after, 1.0)
    assert line["agent"]["plays_by_origin"] == {"designed": 2, "starter": 2}


def test_text_level_designer_without_continuation_is_refused(sandbox: Sandbox) -> None:
    from spade.cycle import CycleContext, Roles, run_cycle
    from spade.errors import UserError

    class TextOnly:
        name = "text-only"

        def chat(self, conversations: Any, params: Any) -> list[Any]:
            raise AssertionError("must be refused before generating")

    recipe = load_recipe("tiny").with_overrides(**{
        "selfplay.designer.prefill": "skeleton", "selfplay.designer.use_corpus": False})
    cfg = recipe.selfplay
    roles = Roles(designer=TextOnly(), agent=ScriptedPolicy(_respond), hint_writer=None,
                  hint_source=cfg.designer.hint_source, designer_frozen=True)
    ctx = CycleContext(cfg, roles, sandbox, LexicalEmbedder())
    with pytest.raises(UserError, match="cannot continue a prefilled reply"):
        run_cycle(ctx, fresh_state(cfg), 0)


@pytest.mark.bwrap
def test_tiny_training_run_with_prefill_and_top_up(tmp_path: Any, cache_env: Any) -> None:
    """A real TRL step on the tiny model with the skeleton prefilled: the run trains, and
    every step line carries the origin counts the report reads."""
    pytest.importorskip("trl")
    from spade.train._run import run_training

    recipe = load_recipe("tiny").with_overrides(**{
        "steps": 2, "selfplay.designer.prefill": "skeleton", "pool.min_designed": 2})
    summary = run_training(recipe, tmp_path / "run", say=lambda _: None)
    lines = [json.loads(x) for x in summary.metrics_path.read_text().splitlines()]
    assert [m["step"] for m in lines] == [0, 1]
    for m in lines:
        plays = m["agent"]["plays_by_origin"]
        assert set(plays) == {"designed", "starter"}
        assert sum(plays.values()) == m["agent"]["episodes"]
        assert sum(m["pool"]["by_origin"].values()) == m["pool"]["size"]
    assert lines[0]["designer"]["designs"] == 4
    assert set(lines[0]["designer"]["failures_by_stage"]) >= {"parse"}
    # the random model's designs are invalid: the pool stays the two starters
    assert lines[1]["agent"]["plays_by_origin"]["starter"] == lines[1]["agent"]["episodes"]
    assert lines[0]["pool"]["by_origin"] == {"designed": 0, "starter": 2}


def test_starter_family_modules_name_generation_zero() -> None:
    from spade.errors import UserError
    from spade.families import all_instances

    pool = initial_pool("games", ["sum_numbers/0", "letter_at/3"], min_designed=3)
    module = {i.name: i for i in all_instances(("sum_numbers", "letter_at"))}
    assert [e.env_id for e in pool.envs] == ["g0000-sum_numbers-0", "g0000-letter_at-3"]
    assert [e.source for e in pool.envs] == [module["sum_numbers/0"].source,
                                             module["letter_at/3"].source]
    assert all(e.origin == "starter" and e.hint for e in pool.envs)
    assert pool.starters == pool.envs
    with pytest.raises(UserError, match="sum_numbers/999"):
        initial_pool("games", ["sum_numbers/999"])
    with pytest.raises(UserError, match="nope/0"):
        initial_pool("games", ["nope/0"])


def test_starter_modules_enter_memory_with_their_measured_rates() -> None:
    from spade.train._pool import starter_memory

    from spade.families.measure import bundled_rate_pairs

    entries = starter_memory(["letter_at/0", "walk_line/4", "sum_numbers"])
    assert [e.env_id for e in entries] == ["g0000-letter_at-0", "g0000-walk_line-4"]
    hinted, unhinted = bundled_rate_pairs()["letter_at"]
    first = entries[0]
    assert (first.solve_rate_hinted, first.solve_rate_unhinted) == (hinted, unhinted)
    assert first.regret == max(0.0, hinted - unhinted)
    assert "class" in first.source and first.summary
