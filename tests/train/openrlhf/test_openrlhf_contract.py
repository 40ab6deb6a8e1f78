"""The executor's output through OpenRLHF's OWN code (the installed openrlhf==0.11.2):
its experience conversion and its advantage computation, with the arguments its own CLI
produces from our generated command. Only the GPU stacks (ray, vLLM, DeepSpeed,
flash-attn) are stand-ins. Runs in ``nox -s openrlhf_contract``; skipped where OpenRLHF is
not installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

try:  # not importorskip: this directory itself is importable as a namespace package "openrlhf"
    version("openrlhf")
except PackageNotFoundError:
    pytest.skip("openrlhf is not installed (nox -s openrlhf_contract)", allow_module_level=True)

from _fake_vllm import FakeEngine, install, run_steps
from spade.train._rollout import Sample
from spade.train._tickets import Role
from spade.train.openrlhf import TicketExecutor, openrlhf_sample
from spade.train.openrlhf._cli import check_command
from spade.train.openrlhf._flags import Layout, command, unsupported
from spade.train.openrlhf._launch import prepare_run
from spade.train.openrlhf._probe import capture_args, install_stubs
from spade.train.recipe import TrainRecipe, bundled_recipe, load_recipe

from spade.rewards import grouped_advantages

pytestmark = pytest.mark.openrlhf
VERSION = "0.11.2"


def _gpu(recipe: TrainRecipe) -> TrainRecipe:
    return recipe.with_overrides(**{"model.device": "cuda", "cluster.gpus_per_node": 1})


def _openrlhf(recipe: TrainRecipe, tmp: Path) -> tuple[Any, Any, Any]:
    """OpenRLHF's args for our command, a SamplesGenerator and an experience maker."""
    import torch

    args, _ = capture_args(command(_gpu(recipe), Layout(tmp, "/models/m"), VERSION))
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

    gen = object.__new__(SamplesGenerator)
    gen.args = args
    maker = object.__new__(RemoteExperienceMaker)
    maker.strategy = SimpleNamespace(args=args)
    maker.args = args
    maker.advantage_estimator = args.algo.advantage.estimator
    maker.kl_ctl = SimpleNamespace(value=args.algo.kl.init_coef)
    assert torch is not None
    return args, gen, maker


def _advantages(gen: Any, maker: Any, responses: list[dict[str, Any]], max_len: int
                ) -> list[Any]:
    import torch

    exps = [gen._process_response_into_experience(r, max_len=max_len) for r in responses]
    for i, e in enumerate(exps):
        e.index = [i]
        e.kl = torch.zeros_like(e.action_mask, dtype=torch.float32)
    return maker.compute_advantages_and_returns(exps)


def _check(exps: list[Any], responses: list[dict[str, Any]]) -> None:
    for e, r in zip(exps, responses, strict=True):
        mask = e.action_mask[0].bool()
        if not mask.any():
            continue
        got = e.advantages[0][mask]
        assert got.allclose(got.new_full(got.shape, r["reward"]), atol=1e-5), (
            f"OpenRLHF applied {got.tolist()[:4]} for SPADE advantage {r['reward']}")


def test_varied_groups_of_both_roles_keep_spade_advantages(tmp_path: Path) -> None:
    install_stubs()
    recipe = load_recipe("tiny")
    g = recipe.grpo.group_size
    rewards = {"d": [1.0, -1.0, 0.25, 0.0], "a": [1.0, 0.0, 0.0, 1.0], "z": [0.5] * g}
    adv = grouped_advantages(rewards).advantages
    responses = []
    for key, role in (("d", Role.DESIGNER), ("a", Role.AGENT), ("z", Role.AGENT)):
        for j in range(g):
            s = Sample(f"t-{key}", role, j, (1, 2, 3), (4, 5, 6, 7, 8), (1, 1, 0, 1, 1),
                       None, rewards[key][j], adv[key][j])
            responses.append(openrlhf_sample(s, "p", "l", step=0, max_length=64,
                                             want_logprobs=False))
    args, gen, maker = _openrlhf(recipe, tmp_path)
    assert args.rollout.n_samples_per_prompt == g
    exps = _advantages(gen, maker, responses, 64)
    _check(exps, responses)
    # the zero-variance group carries no gradient
    assert all(float(e.advantages.abs().max()) == 0.0 for e in exps[2 * g:])
    # and with OpenRLHF's group_norm the same rewards would NOT be SPADE's advantages
    maker.advantage_estimator = args.algo.advantage.estimator = "group_norm"
    exps = _advantages(gen, maker, responses, 64)
    with pytest.raises(AssertionError):
        _check(exps[:g], responses[:g])


@pytest.mark.bwrap
def test_executor_output_through_openrlhf(tmp_path: Path, cache_env: Path,
                                          tiny_model_dir: Path, monkeypatch: Any) -> None:
    install(monkeypatch)
    install_stubs()
    recipe = load_recipe("tiny").with_overrides(steps=2)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepare_run(Layout(run_dir, str(tiny_model_dir)), recipe, recipe.identity())
    executor = TicketExecutor()
    try:
        steps = run_steps(executor, FakeEngine(tiny_model_dir), run_dir, recipe, 2)
    finally:
        executor.close()
    args, gen, maker = _openrlhf(recipe, tmp_path)
    for groups in steps:
        responses = [r for group in groups for r in group]
        exps = _advantages(gen, maker, responses, args.data.max_len)
        _check(exps, responses)
        for e, r in zip(exps, responses, strict=True):
            assert int(e.action_mask.sum()) == sum(b - a for a, b in r["action_ranges"])
            assert float(e.info["reward"]) == pytest.approx(r["reward"])


@pytest.mark.parametrize("name", ["paper_games", "paper_tool_use", "games_qwen3_4b",
                                  "games_qwen3_8b", "games_qwen3_30b_a3b",
                                  "tool_use_qwen3_4b", "tool_use_qwen3_8b",
                                  "tool_use_qwen3_30b_a3b", "tiny", "cpu_demo",
                                  "baseline_rlve", "baseline_reasoning_gym",
                                  "baseline_static_pool"])
def test_every_generated_command_parses(name: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from spade.train.openrlhf._probe import check_flags

    monkeypatch.setenv("SPADE_STATIC_POOL", str(tmp_path / "pool"))
    assert bundled_recipe(name).is_file()
    recipe = load_recipe(name).with_overrides(**{"model.device": "cuda"})
    if unsupported(recipe):  # the tiny recipes' 12 samples do not split over 8 GPUs
        recipe = _gpu(recipe)
    result = check_flags(command(recipe, Layout(tmp_path, "/models/m"), VERSION))
    assert result == {"ok": True, "flags": result.get("flags")}, result
    assert result["flags"] > 100


@pytest.mark.parametrize(("name", "flag", "value", "says"), [
    ("paper_games", "--vllm.num_engines", "4", "must be equal"),
    ("games_qwen3_8b", "--ref.num_gpus_per_node", "4", "must be the same"),
])
def test_the_check_runs_trains_own_placement_asserts(name: str, flag: str, value: str,
                                                     says: str, tmp_path: Path) -> None:
    """Checks OpenRLHF makes inside train(), after its parser, before Ray places work."""
    from spade.train.openrlhf._probe import check_flags

    args = command(load_recipe(name).with_overrides(**{"model.device": "cuda"}),
                   Layout(tmp_path, "/models/m"), VERSION)
    assert check_flags(args)["ok"]
    args[args.index(flag) + 1] = value
    result = check_flags(args)
    assert not result["ok"] and says in result["error"], result


def test_the_check_runs_the_installed_cli(tmp_path: Path) -> None:
    from spade.errors import UserError

    args = command(_gpu(load_recipe("tiny")), Layout(tmp_path, "/models/m"), VERSION)
    assert check_command(args) > 100
    renamed = [a.replace("--rollout.n_samples_per_prompt", "--rollout.samples_per_prompt")
               for a in args]
    with pytest.raises(UserError, match=r"--rollout\.samples_per_prompt"):
        check_command(renamed)
    prefix = [a.replace("--rollout.n_samples_per_prompt", "--rollout.n_samples") for a in args]
    with pytest.raises(UserError, match="not an exact flag"):
        check_command(prefix)


def test_spade_reward_is_logged_beside_openrlhfs_advantage_valued_reward(tmp_path: Path
                                                                        ) -> None:
    """OpenRLHF's "reward" (its progress bar, rollout/reward_mean) is SPADE's advantage,
    about 0 on average; SPADE's own reward reaches its logger as spade/reward (every
    ``info`` tensor is logged)."""
    install_stubs()
    s = Sample("t", Role.AGENT, 0, (1, 2), (3, 4, 5), (1, 0, 1), None, 1.0, 0.5)
    response = openrlhf_sample(s, "p", "l", step=3, max_length=64, want_logprobs=False)
    _, gen, _ = _openrlhf(load_recipe("tiny"), tmp_path)
    info = gen._process_response_into_experience(response, max_len=64).info
    assert float(info["reward"]) == 0.5 and float(info["score"]) == 1.0
    assert float(info["spade/reward"]) == 1.0 and float(info["spade/advantage"]) == 0.5
