"""Recipes: bundled ones load, extends: merges, every error names its field in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade.train.recipe import TrainRecipe, bundled_recipe, load_recipe, resolve

from spade.errors import UserError

RECIPES = sorted((Path(__file__).parents[2] / "train" / "recipes").glob("*.yaml"))


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_bundled_recipe_validates(path: Path) -> None:
    recipe = load_recipe(path)
    plan = recipe.batch_plan()
    assert plan["samples_per_step"] == recipe.grpo.tickets_per_step * recipe.grpo.group_size
    assert plan["gradient_accumulation"] * recipe.grpo.micro_batch_size == plan["samples_per_step"]
    # the file form (without what training derives) reads back as the same recipe
    assert resolve(recipe.file_form(), "again") == recipe


def test_the_self_play_section_is_derived_from_the_training_recipe() -> None:
    tiny = load_recipe("tiny")
    assert tiny.selfplay.designer.designs_per_prompt == tiny.grpo.group_size == 4
    assert tiny.selfplay.policy.spec == "scripted"  # unused: model.path plays both roles
    wider = tiny.with_overrides(**{"grpo.group_size": 2, "grpo.micro_batch_size": 2})
    assert wider.selfplay.designer.designs_per_prompt == 2
    frozen = load_recipe("ablation_frozen_designer")
    assert frozen.model.freeze_designer and frozen.selfplay.policy.frozen_designer is None
    assert frozen.file_form()["selfplay"]["policy"]["frozen_designer"] == "initial"
    external = load_recipe("ablation_external_designer")
    assert not external.model.freeze_designer
    assert external.selfplay.policy.frozen_designer.startswith("openai:")


def test_one_temperature_is_both_roles_sampling_temperature() -> None:
    """The loss re-scores every sample at one temperature: a recipe states it once."""
    demo = load_recipe("cpu_demo")
    assert demo.temperature == 0.5
    for recipe in (demo, demo.with_overrides(temperature=0.8),
                   load_recipe("learning")):
        roles = recipe.selfplay.designer.sampling, recipe.selfplay.agent.sampling
        assert [s.temperature for s in roles] == [recipe.temperature] * 2
    assert demo.with_overrides(temperature=0.8).temperature == 0.8
    assert demo.file_form()["temperature"] == 0.5
    assert "temperature" not in demo.file_form()["selfplay"]["agent"]["sampling"]
    assert load_recipe("tiny").temperature == 1.0  # the base recipe's


@pytest.mark.parametrize(("key", "value", "instead"), [
    ("selfplay.designer.designs_per_prompt", 4, "grpo.group_size"),
    ("selfplay.policy.spec", "scripted", "model.path"),
    ("selfplay.cycles", 3, "steps"),
    ("model.freeze_designer", True, "selfplay.policy.frozen_designer: initial"),
    ("selfplay.designer.sampling.temperature", 1.0, "set temperature"),
    ("selfplay.agent.sampling.temperature", 1.0, "set temperature"),
])
def test_a_derived_key_is_refused_naming_the_key_to_set(tmp_path: Path, key: str,
                                                        value: object, instead: str) -> None:
    """Old recipe files that state a derived key (even with the value it would get) fail in
    one line naming the key, and so does an override of it."""
    *parents, leaf = key.split(".")
    text = "".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents))
    path = tmp_path / "old.yaml"
    path.write_text(f"extends: {bundled_recipe('tiny')}\n{text}{'  ' * len(parents)}{leaf}: "
                    f"{str(value).lower()}\n")
    for attempt in (lambda: load_recipe(path), lambda: load_recipe("tiny").with_overrides(
            **{key: value})):
        with pytest.raises(UserError) as err:
            attempt()
        message = str(err.value)
        assert key in message and instead in message and "\n" not in message


def test_paper_settings_carry_the_reference_numbers() -> None:
    games = load_recipe("games_qwen3_8b")
    tools = load_recipe("tool_use_qwen3_4b")
    assert games.steps == 400 and games.regenerate_every == 4 and tools.regenerate_every == 8
    assert games.grpo.samples_per_step == 192 and games.grpo.kl_coef == 0.005
    assert load_recipe("games_qwen3_4b").grpo.kl_coef == 0.0
    assert (games.grpo.clip_low, games.grpo.clip_high, games.optim.lr) == (0.2, 0.28, 1e-6)
    assert games.selfplay.designer.prompts_per_cycle * games.grpo.group_size == 24
    assert games.selfplay.agent.max_turns == 25 and games.selfplay.memory.capacity == 200
    assert tools.selfplay.designer.setting == "tool_use" and games.model.requires_gpu


def test_extends_merges_mappings_and_child_wins(tmp_path: Path) -> None:
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {bundled_recipe('tiny')}\nsteps: 9\n"
                     "selfplay: {agent: {max_turns: 3}}\n")
    recipe = load_recipe(child)
    base = load_recipe("tiny")
    assert recipe.steps == 9 and recipe.selfplay.agent.max_turns == 3
    assert recipe.selfplay.agent.plays_per_arm == base.selfplay.agent.plays_per_arm
    assert recipe.model == base.model


@pytest.mark.parametrize(("text", "field"), [
    ("extends: tiny.yaml\ngrpo: {group_sise: 4}\n", "grpo.group_sise"),
    ("extends: tiny.yaml\nsteps: 0\n", "steps"),
    ("extends: tiny.yaml\ngrpo: {micro_batch_size: 5}\n", "micro_batch_size"),
    ("extends: tiny.yaml\nselfplay: {designer: {designs_per_prompt: 3}}\n", "designs_per_prompt"),
    ("extends: tiny.yaml\nselfplay: {agent: {sampling: {temperature: 0.3}}}\n", "temperature"),
    ("extends: tiny.yaml\ntemperature: -1\n", "temperature: must be a number >= 0"),
    ("extends: tiny.yaml\ntemperature: warm\n", "temperature: must be a number >= 0"),
    ("extends: nowhere.yaml\n", "nowhere"),
    ("steps: [1\n", "malformed YAML at line"),
])
def test_bad_recipes_name_the_field_in_one_line(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    (tmp_path / "tiny.yaml").write_text(bundled_recipe("tiny").read_text())
    with pytest.raises(UserError) as err:
        load_recipe(path)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_extends_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(UserError, match="cycle"):
        load_recipe(tmp_path / "a.yaml")


def test_model_path_variables_and_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = load_recipe("games_qwen3_4b")
    monkeypatch.delenv("SPADE_QWEN3_4B_INSTRUCT_2507", raising=False)
    with pytest.raises(UserError, match="SPADE_QWEN3_4B_INSTRUCT_2507"):
        recipe.model.resolved_path()
    monkeypatch.setenv("SPADE_QWEN3_4B_INSTRUCT_2507", "/models/q")
    assert recipe.model.resolved_path() == "/models/q"
    longer = recipe.with_overrides(steps=800)
    assert longer.fingerprint() == recipe.fingerprint()  # a run can be extended
    assert recipe.with_overrides(**{"optim.lr": 2e-6}).fingerprint() != recipe.fingerprint()


def test_designer_tickets_only_on_regeneration_steps() -> None:
    recipe = load_recipe("tiny")
    assert [recipe.designer_tickets(s) for s in range(5)] == [1, 0, 1, 0, 1]
    fixed = recipe.with_overrides(**{"pool.source": "fixed"})
    assert all(fixed.designer_tickets(s) == 0 for s in range(5))
    assert isinstance(fixed, TrainRecipe)
