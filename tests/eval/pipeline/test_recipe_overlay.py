"""An experiment's ``recipe_overlay``: every method takes the per-size recipe's own settings,
so a paper experiment trains SPADE exactly as the size recipe does, and cannot drift from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade.eval.pipeline._experiment import load_experiment
from spade.eval.pipeline._preflight import method_recipe
from spade.train.recipe import load_recipe

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
SIZED = sorted(p for p in EXPERIMENTS.glob("paper_*_qwen3_*.yaml"))


@pytest.fixture(autouse=True)
def _models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SPADE_QWEN3_4B_INSTRUCT_2507", "SPADE_QWEN3_8B",
                "SPADE_QWEN3_30B_A3B_INSTRUCT_2507", "SPADE_USER_MODEL"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))


@pytest.mark.parametrize("path", SIZED, ids=lambda p: p.stem)
def test_spade_in_a_sized_experiment_is_the_size_recipe(path: Path) -> None:
    exp = load_experiment(path)
    assert exp.recipe_overlay, "a sized paper experiment names its size recipe"
    spade = next(m for m in exp.methods if m.kind == "spade")
    trained = method_recipe(exp, spade).model_dump(exclude={"name"})
    sized = load_recipe(exp.recipe_overlay).model_dump(exclude={"name"})
    assert trained == sized


@pytest.mark.parametrize("path", SIZED, ids=lambda p: p.stem)
def test_every_method_takes_the_size_settings(path: Path) -> None:
    exp = load_experiment(path)
    sized = load_recipe(exp.recipe_overlay)
    for m in exp.methods:
        if m.recipe is None:
            continue
        recipe = method_recipe(exp, m)
        # a method's own switch (the frozen designer) stays the method's
        own = {"freeze_designer"}
        assert recipe.model.model_dump(exclude=own) == sized.model.model_dump(exclude=own), m.label
        assert recipe.cluster == sized.cluster, m.label
        assert recipe.grpo.kl_coef == sized.grpo.kl_coef, m.label


def test_overrides_win_over_the_overlay(tmp_path: Path) -> None:
    exp_file = tmp_path / "exp.yaml"
    exp_file.write_text("extends: paper_games_qwen3_8b.yaml\nname: x\n"
                        f"results_dir: {tmp_path / 'r'}\nruns_dir: {tmp_path / 'runs'}\n"
                        "recipe_overrides: {grpo: {kl_coef: 0.0}}\n", encoding="utf-8")
    (tmp_path / "paper_games_qwen3_8b.yaml").write_text(
        (EXPERIMENTS / "paper_games_qwen3_8b.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "paper_games.yaml").write_text(
        (EXPERIMENTS / "paper_games.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    exp = load_experiment(exp_file)
    assert exp.recipe_overrides["grpo"] == {"kl_coef": 0.0}
    assert exp.recipe_overrides["cluster"] == {"ring_attn_size": 2}


def test_an_unknown_overlay_is_one_line(tmp_path: Path) -> None:
    from spade.errors import UserError

    exp_file = tmp_path / "exp.yaml"
    exp_file.write_text(f"name: x\nresults_dir: {tmp_path}\nruns_dir: {tmp_path}\n"
                        "methods: [{label: base, kind: base, model: smollm2}]\n"
                        "recipe_overlay: no_such_recipe\n", encoding="utf-8")
    with pytest.raises(UserError, match="no bundled recipe 'no_such_recipe'"):
        load_experiment(exp_file)
