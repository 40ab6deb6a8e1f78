"""The Reasoning Gym pool: rewards are the package's own score_answer; no evaluation items."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from spade.eval.data import ENV_VAR, resolve_data_dir
from spade.train.recipe import load_recipe

from spade.baselines import RgDataset, RgProblems, draw, rg_source
from spade.baselines._inprocess import in_process_env
from spade.sandbox import Sandbox, SandboxLimits

reasoning_gym = pytest.importorskip("reasoning_gym")

RECIPE = "baseline_reasoning_gym"
ANSWERS = ("", "zzz", "0", "1 2 3", "\\boxed{7}")


def _recipe_datasets() -> tuple[RgDataset, ...]:
    pool = load_recipe(RECIPE).fixed_env
    assert pool is not None and pool.kind == "reasoning_gym"
    return pool.datasets


def _expected(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """The evaluation suite's scoring rule: score_answer, clipped; a scorer error is 0."""
    try:
        return min(1.0, max(0.0, float(ds.score_answer(answer, entry))))
    except Exception:
        return 0.0


def _split_file() -> Path:
    split = resolve_data_dir() / "reasoning_gym" / "hard_split_params.yaml"
    if not split.is_file():
        pytest.skip(f"the Reasoning Gym evaluation split file is not at {split} "
                    f"(set {ENV_VAR})")
    return split


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=60.0)) as box:
        yield box


@pytest.mark.parametrize("dataset", _recipe_datasets(), ids=lambda d: d.name)
def test_rewards_equal_score_answer_in_process(dataset: RgDataset) -> None:
    env = in_process_env(rg_source(dataset))
    ds = reasoning_gym.create_dataset(dataset.name, seed=dataset.seed, size=dataset.size,
                                      **dataset.params)
    for index in (0, 1, dataset.size - 1):
        entry = ds[index]
        observation, info = env.reset(seed=index)
        assert info["index"] == index and entry["question"].strip() in observation
        for answer in (str(entry["answer"]), *ANSWERS):
            env.reset(seed=index)
            reward = env.step(f"<answer>{answer}</answer>")[1]
            assert reward == _expected(ds, answer, entry), (dataset.name, answer)
        env.reset(seed=index)
        assert env.step(str(entry["answer"]))[1] == 1.0  # the boxed action's content


@pytest.mark.bwrap
@pytest.mark.parametrize("dataset", _recipe_datasets(), ids=lambda d: d.name)
def test_rewards_equal_score_answer_in_sandbox(sandbox: Sandbox, dataset: RgDataset) -> None:
    ds = reasoning_gym.create_dataset(dataset.name, seed=dataset.seed, size=dataset.size,
                                      **dataset.params)
    with sandbox.load(rg_source(dataset), filename=f"{dataset.env_id}.py") as handle:
        for index in (3, 4):
            entry = ds[index]
            observation = handle.reset(seed=index)[0]
            assert entry["question"].strip() in observation
            for answer in (str(entry["answer"]), "zzz"):
                handle.reset(seed=index)
                assert handle.step(answer)[1] == _expected(ds, answer, entry)
        assert handle.violations == ()


def test_problems_round_robin_and_seeded() -> None:
    datasets = _recipe_datasets()
    a, b = RgProblems(datasets, seed=3), RgProblems(datasets, seed=3)
    drawn = draw(a, 0, 2 * len(datasets))
    assert drawn == draw(b, 0, 2 * len(datasets))
    assert [b.problem(0, i, i) for i in reversed(range(len(drawn)))] == drawn[::-1]
    assert sorted({p.env_id for p in drawn}) == sorted(d.env_id for d in datasets)
    sizes = {d.env_id: d.size for d in datasets}
    assert all(0 <= p.seed < sizes[p.env_id] for p in drawn)
    assert draw(a, 1, 4) != draw(a, 0, 4)


def _no_overlap(limit: int | None) -> None:
    """No training question of the recipe's pool is a question of the evaluation split."""
    split = _split_file()
    cfg = yaml.safe_load(split.read_text(encoding="utf-8"))
    seed0, size0 = int(cfg["default_seed"]), int(cfg["default_size"])
    specs = {d["dataset"]: d for c in cfg["categories"] for d in c["datasets"]}
    for dataset in _recipe_datasets():
        assert dataset.seed != seed0
        spec = specs.get(dataset.name)
        if spec is None:
            continue
        ev = reasoning_gym.create_dataset(dataset.name, seed=int(spec.get("seed", seed0)),
                                          size=int(spec.get("size", size0)),
                                          **(spec.get("params") or {}))
        held_out = {ev[i]["question"] for i in range(len(ev))}
        ds = reasoning_gym.create_dataset(dataset.name, seed=dataset.seed, size=dataset.size,
                                          **dataset.params)
        n = dataset.size if limit is None else min(limit, dataset.size)
        clash = [i for i in range(n) if ds[i]["question"] in held_out]
        assert not clash, f"{dataset.name}: training items {clash[:5]} are evaluation items"


def test_no_evaluation_items_in_the_pool() -> None:
    _no_overlap(None)
