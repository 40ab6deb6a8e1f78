"""The fixed pool of the starter families: the agent alone on the families' modules, every
play on a training seed, never on one of the held-out seeds the ``families`` suite plays."""

from __future__ import annotations

import pytest
from spade.train import Role, plan_steps
from spade.train.recipe import load_recipe

from spade.baselines import problem_source
from spade.baselines._config import FamiliesConfig
from spade.baselines._problems import draw
from spade.errors import UserError
from spade.families import TRAINING_SEEDS, all_instances, heldout_plays
from spade.paths import project_root

RECIPE = project_root() / "experiments" / "recipes" / "fixed_families_cpu.yaml"


def test_the_cpu_recipe_is_the_demo_budget_without_a_designer() -> None:
    recipe, demo = load_recipe(RECIPE), load_recipe("cpu_demo")
    assert recipe.method.kind == "fixed_env" and recipe.fixed_env is not None
    assert recipe.fixed_env.kind == "families" and not recipe.warm_start.enabled
    assert (recipe.steps, recipe.grpo) == (demo.steps, demo.grpo)
    assert recipe.selfplay.agent == demo.selfplay.agent
    tickets = plan_steps(recipe, recipe.steps)
    assert tickets and all(t.role is Role.AGENT for t in tickets)


def test_problems_are_modules_on_training_seeds_only() -> None:
    source = problem_source(FamiliesConfig(), seed=0)
    problems = [p for step in range(50) for p in draw(source, step, 4)]
    assert problems == [p for step in range(50)
                        for p in draw(problem_source(FamiliesConfig(), seed=0), step, 4)]
    modules = {i.name for i in all_instances()}
    assert {p.env_id for p in problems} <= modules
    assert len({p.env_id.split("/")[0] for p in problems}) == 6
    assert all(p.seed in TRAINING_SEEDS for p in problems)
    assert not {p.seed for p in problems} & {h.seed for h in heldout_plays(2000)}
    assert source.source(problems[0].env_id).startswith("import ")
    for p in problems[:3]:
        source.observe(p, [True, False])
    again = problem_source(FamiliesConfig(), seed=0)
    again.restore(source.state())
    assert again.metrics() == source.metrics()


def test_one_family_and_unknown_names() -> None:
    source = problem_source(FamiliesConfig(families=("letter_at",)), seed=1)
    assert {p.env_id.split("/")[0] for p in draw(source, 0, 8)} == {"letter_at"}
    with pytest.raises(ValueError, match="unknown environment family"):
        FamiliesConfig(families=("nope",))
    with pytest.raises(UserError, match="not a module"):
        source.source("sum_numbers/0")
