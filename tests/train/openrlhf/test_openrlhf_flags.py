"""The recipe -> ``train_ppo_ray`` map (no OpenRLHF needed; the installed CLI's check is in
the contract tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade.train.openrlhf import SUPPORTED, Layout, command, placement, unsupported
from spade.train.recipe import load_recipe

from spade.errors import UserError


def _flags(args: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = None
    for a in args:
        if a.startswith("--"):
            key = a
            out[key] = []
        else:
            assert key is not None
            out[key].append(a)
    return out


def _gpu(name: str, **changes: object):  # type: ignore[no-untyped-def]
    return load_recipe(name).with_overrides(**{"model.device": "cuda", **changes})


def test_one_step_is_one_openrlhf_step(tmp_path: Path) -> None:
    r = _gpu("paper_games")
    f = _flags(command(r, Layout(tmp_path, "/m"), "0.11.2"))
    g = r.grpo
    assert f["--rollout.batch_size"] == f["--data.max_samples"] == [str(g.tickets_per_step)]
    assert f["--rollout.n_samples_per_prompt"] == [str(g.group_size)]
    assert f["--train.batch_size"] == [str(g.tickets_per_step * g.group_size)]
    assert f["--train.num_episodes"] == [str(r.steps)]
    assert f["--algo.advantage.estimator"] == ["dr_grpo"]
    assert f["--actor.eps_clip_low_high"] == ["0.2", "0.28"]
    assert f["--train.agent_func_path"] == [str(tmp_path / "openrlhf" / "agent.py")]
    assert "--algo.dynamic_filtering_enable" not in f  # would drop mean-0 groups
    assert "--ref.num_gpus_per_node" not in f  # KL 0: no reference model
    assert "--algo.kl.use_loss" not in f


def test_kl_adds_the_reference_model_and_a_kl_loss(tmp_path: Path) -> None:
    r = _gpu("games_qwen3_8b")
    assert r.grpo.kl_coef > 0
    f = _flags(command(r, Layout(tmp_path, "/m"), "0.11.2"))
    assert f["--algo.kl.init_coef"] == [f"{r.grpo.kl_coef:g}"]
    assert "--algo.kl.use_loss" in f and f["--algo.kl.estimator"] == ["k3"]
    assert placement(r)["reference_gpus"] == r.cluster.gpus


@pytest.mark.parametrize(("changes", "field"), [
    ({"model.device": "cpu"}, "model.device"),
    ({"grpo.loss_type": "bnpo"}, "grpo.loss_type"),
    ({"model.dtype": "float32"}, "model.dtype"),
    ({"selfplay.policy.frozen_designer": "initial"}, "selfplay.policy.frozen_designer: initial"),
])
def test_fields_it_cannot_honour_are_refused_by_name(tmp_path: Path, changes: dict[str, object],
                                                     field: str) -> None:
    r = load_recipe("paper_games").with_overrides(**changes)
    assert any(x.startswith(field) for x in unsupported(r))
    with pytest.raises(UserError, match=field.replace(".", r"\.")):
        command(r, Layout(tmp_path, "/m"), "0.11.2")


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    assert "0.11.2" in SUPPORTED
    with pytest.raises(UserError, match=r"0\.12\.0 is not supported"):
        command(_gpu("paper_games"), Layout(tmp_path, "/m"), "0.12.0")


def test_placement_must_fit_the_gpus() -> None:
    with pytest.raises(UserError, match="cluster"):
        load_recipe("paper_games").with_overrides(**{"cluster.gpus_per_node": 2,
                                                     "cluster.vllm_engines": 4})


@pytest.mark.parametrize("name", ["baseline_rlve", "baseline_reasoning_gym",
                                  "baseline_static_pool"])
def test_baselines_dry_run_on_openrlhf(name: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixed-environment baselines are agent-only OpenRLHF runs: one ticket slot per
    problem of a step, G samples each; the dry run prints their command and placement."""
    import json
    import shlex

    from spade.cli import main

    monkeypatch.setenv("SPADE_STATIC_POOL", str(tmp_path / "pool"))
    r = load_recipe(name)
    assert r.fixed_env is not None and unsupported(r) == []
    assert main(["train", "--recipe", name, "--backend", "openrlhf", "--dry-run",
                 "--run-dir", str(tmp_path / "run")]) == 0
    report = json.loads(capsys.readouterr().out)["openrlhf"]
    argv = shlex.split(report["command"])
    f = _flags(argv[argv.index("-m") + 2:])  # python -m openrlhf.cli.train_ppo_ray FLAGS
    assert f["--rollout.batch_size"] == [str(r.grpo.tickets_per_step)]
    assert f["--rollout.n_samples_per_prompt"] == [str(r.grpo.group_size)]
    assert report["placement"]["tickets_per_step"] == r.grpo.tickets_per_step
