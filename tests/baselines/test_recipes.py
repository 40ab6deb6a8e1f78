"""Baseline and ablation recipes: each differs from the SPADE recipe in exactly its fields."""

from __future__ import annotations

from typing import Any

import pytest
from spade.train.recipe import load_recipe

from spade.errors import UserError

PARENT = "paper_games"
#: What every derived recipe changes besides its own setting.
COMMON = {"name", "method.label", "method.kind"}

ABLATIONS: dict[str, set[str]] = {
    "ablation_no_corpus": {"selfplay.designer.use_corpus"},
    "ablation_no_memory": {"selfplay.designer.use_memory"},
    "ablation_frozen_designer": {"model.freeze_designer"},
    "ablation_external_designer": {"selfplay.policy.frozen_designer"},
    "ablation_solve_rate": {"selfplay.reward.variant"},
    "ablation_learning_potential": {"selfplay.reward.variant"},
    "ablation_hint_self": {"selfplay.designer.hint_source"},
    "ablation_hint_external": {"selfplay.designer.hint_source", "selfplay.policy.hint_writer"},
    "ablation_two_skills": {"selfplay.designer.skills"},
}
BASELINES: dict[str, set[str]] = {
    name: {"pool.source", "fixed_env"}
    for name in ("baseline_rlve", "baseline_reasoning_gym", "baseline_static_pool")
}


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}{key}." if prefix or key else key))
        return out
    return {prefix.rstrip("."): data}


def _changed(name: str) -> set[str]:
    parent = _flat(load_recipe(PARENT).model_dump(mode="json"))
    child = _flat(load_recipe(name).model_dump(mode="json"))
    changed = {k for k in parent.keys() | child.keys() if parent.get(k) != child.get(k)}
    # a new block (fixed_env) counts as one field, however many leaves it has
    return {k.split(".")[0] if k.startswith("fixed_env") else k for k in changed}


@pytest.mark.parametrize(("name", "fields"), sorted({**ABLATIONS, **BASELINES}.items()))
def test_differs_from_spade_in_exactly_its_fields(name: str, fields: set[str]) -> None:
    assert _changed(name) == fields | COMMON


@pytest.mark.parametrize("name", sorted({**ABLATIONS, **BASELINES}))
def test_records_method_label_and_kind(name: str) -> None:
    recipe = load_recipe(name)
    assert recipe.method.kind == ("fixed_env" if name.startswith("baseline") else "ablation")
    assert recipe.method.label and recipe.name == name
    assert load_recipe(PARENT).method.kind == "spade"


def test_rewards_and_baseline_settings() -> None:
    assert load_recipe("ablation_solve_rate").selfplay.reward.variant == "solve_rate"
    rlve = load_recipe("baseline_rlve")
    assert rlve.fixed_env is not None and rlve.fixed_env.kind == "rlve"
    assert len(rlve.fixed_env.environments) == 16
    assert (rlve.fixed_env.window.tau_num, rlve.fixed_env.window.tau_acc,
            rlve.fixed_env.window.width) == (128, 0.9, 4)
    # same budget as SPADE: steps and samples per step
    spade = load_recipe(PARENT)
    for name in BASELINES:
        r = load_recipe(name)
        assert (r.steps, r.grpo.samples_per_step) == (spade.steps, spade.grpo.samples_per_step)
        assert r.designer_tickets(0) == 0


def test_bad_fixed_env_blocks_are_refused(tmp_path: Any) -> None:
    bad = {
        "kind: fixed without problems": "method: {kind: fixed_env}\npool: {source: fixed}\n",
        "unknown kind": "method: {kind: fixed_env}\npool: {source: fixed}\n"
                        "fixed_env: {kind: nope}\n",
        "unknown key": "method: {kind: fixed_env}\npool: {source: fixed}\n"
                       "fixed_env: {kind: rlve, windw: {}}\n",
        "selfplay pool": "method: {kind: fixed_env}\nfixed_env: {kind: rlve}\n",
        "unknown RLVE id": "method: {kind: fixed_env}\npool: {source: fixed}\n"
                           "fixed_env: {kind: rlve, environments: [Divison]}\n",
    }
    for what, text in bad.items():
        path = tmp_path / "r.yaml"
        path.write_text("extends: tiny\n" + text)
        with pytest.raises(UserError) as info:
            load_recipe(path)
        assert "\n" not in str(info.value), what
        if what == "unknown RLVE id":
            assert "unknown RLVE environment 'Divison'" in str(info.value)
