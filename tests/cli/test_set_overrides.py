"""``--set KEY=VALUE`` on every command that reads a config: one dotted setter, the same
checks as the config file, one line and exit 2 for an unknown key or a bad value."""

from __future__ import annotations

import json

import pytest

from spade.cli import command_parser, main
from spade.errors import UserError


def _one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    for needle in needles:
        assert needle in err, err


def test_train_set_changes_the_recipe_and_what_derives_from_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--recipe", "tiny", "--dry-run", "--set", "grpo.group_size=2",
                 "--set", "grpo.micro_batch_size=2", "--set", "selfplay.agent.max_turns=3"]) == 0
    recipe = json.loads(capsys.readouterr().out)["recipe"]
    assert recipe["grpo"]["group_size"] == 2 and recipe["grpo"]["micro_batch_size"] == 2
    assert recipe["selfplay"]["designer"]["designs_per_prompt"] == 2
    assert recipe["selfplay"]["agent"]["max_turns"] == 3


def test_set_comes_after_the_commands_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--recipe", "tiny", "--dry-run", "--steps", "3",
                 "--set", "steps=5"]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"]["steps"] == 5


@pytest.mark.parametrize(("assignment", "needles"), [
    ("grpo.group_sise=4", ("grpo.group_sise",)),
    ("steps=0", ("steps",)),
    ("steps=many", ("steps",)),
    ("steps.every=1", ("steps is a value, not a section",)),
    ("selfplay.designer.designs_per_prompt=2", ("designs_per_prompt", "grpo.group_size")),
    ("steps", ("expected KEY=VALUE",)),
    ("=4", ("expected KEY=VALUE",)),
    ("grpo..group_size=4", ("expected KEY=VALUE",)),
])
def test_train_refuses_a_bad_set_in_one_line(capsys: pytest.CaptureFixture[str],
                                             assignment: str, needles: tuple[str, ...]) -> None:
    assert main(["train", "--recipe", "tiny", "--dry-run", "--set", assignment]) == 2
    _one_line_error(capsys, *needles)


def test_selfplay_set_goes_through_the_run_config() -> None:
    from spade.cli.selfplay import _config

    parser = command_parser("selfplay")
    config = _config(parser.parse_args(["--set", "agent.plays_per_arm=3", "--cycles", "2",
                                        "--set", "designer.skills=[math, logic]"]))
    assert config.agent.plays_per_arm == 3 and config.cycles == 2
    assert config.designer.skills == ("math", "logic")
    with pytest.raises(UserError, match=r"agent\.plays_per_arms") as err:
        _config(parser.parse_args(["--set", "agent.plays_per_arms=3"]))
    assert "\n" not in str(err.value)


def test_eval_run_set_is_its_protocol_option(tmp_path) -> None:
    from spade.eval.cli import build_config

    parser = command_parser("eval")
    common = ["run", "--model", "oracle", "--suites", "aime25", "--out", str(tmp_path),
              "--data-dir", str(tmp_path)]
    by_option = build_config(parser.parse_args([*common, "--temperature", "0.6",
                                                "--limit", "3"]))
    by_set = build_config(parser.parse_args([*common, "--set", "temperature=0.6",
                                             "--set", "limit=3"]))
    assert by_set.identity() == by_option.identity()
    assert by_set.overrides["temperature"] == 0.6 and by_set.overrides["limit"] == 3
    for bad, needle in (("temperatur=0.6", "not a protocol field"),
                        ("samples=0", "must be at least 1"),
                        ("top_p=2", "must lie in")):
        with pytest.raises(UserError, match=needle) as err:
            build_config(parser.parse_args([*common, "--set", bad]))
        assert bad.partition("=")[0] in str(err.value) and "\n" not in str(err.value)


def test_experiment_set_goes_through_the_experiment_file() -> None:
    from spade.eval.pipeline import load_experiment

    exp = load_experiment("cpu", {"eval.limit": 1, "recipe_overrides.steps": 2})
    assert exp.eval.limit == 1 and exp.recipe_overrides == {"steps": 2}
    with pytest.raises(UserError, match=r"with --set: eval\.limitt") as err:
        load_experiment("cpu", {"eval.limitt": 1})
    assert "\n" not in str(err.value)


def test_experiment_command_refuses_a_bad_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "train", "cpu", "--set", "eval.limit=0"]) == 2
    _one_line_error(capsys, "eval.limit")
