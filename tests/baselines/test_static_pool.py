"""A static pool exported by a frozen-designer self-play run loads and is drawn without
replacement; it is bound to its sha256 and played through the real sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spade.baselines import (
    StaticPoolConfig,
    StaticProblems,
    draw,
    play_step,
    pool_sha256,
    problem_source,
)
from spade.config import RunConfig
from spade.cycle import load_pool, run_selfplay, scripted_roles
from spade.episodes import EpisodeConfig
from spade.errors import UserError
from spade.policy import SamplingParams
from spade.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.needs("corpora")

TINY = {
    "seed": 0, "cycles": 2, "policy": {"spec": "scripted", "frozen_designer": "scripted"},
    "designer": {"setting": "games", "prompts_per_cycle": 2, "designs_per_prompt": 3},
    "agent": {"plays_per_arm": 2, "max_turns": 10}, "diversity": {"embedder": "lexical"},
}


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("static") / "run"
    run_selfplay(RunConfig.model_validate(TINY), run, progress=lambda _: None)
    assert len(load_pool(run)) >= 2
    return run


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as box:
        yield box


def test_drawn_without_replacement(pool_dir: Path) -> None:
    source = StaticProblems(pool_dir, seed=7)
    n = len(source.env_ids)
    assert sorted(source.env_ids) == sorted(e.env_id for e in load_pool(pool_dir))
    first = [p.env_id for p in draw(source, 0, n)]  # slots 0 .. n-1
    assert sorted(first) == source.env_ids  # every environment exactly once per pass
    assert source.coverage == 1.0
    second = [p.env_id for p in draw(source, 1, n)]  # slots n .. 2n-1
    assert sorted(second) == source.env_ids
    assert first != second or n < 3  # a fresh shuffle per pass
    # tickets of two steps of 2 cover consecutive slots: no repeat within a pass
    small = StaticProblems(pool_dir, seed=7)
    spread = [p.env_id for s in range(n // 2) for p in draw(small, s, 2)]
    assert len(set(spread)) == len(spread) == 2 * (n // 2)
    again = StaticProblems(pool_dir, seed=7)
    assert [p.env_id for p in draw(again, 0, n)] == first  # seeded


def test_draws_do_not_depend_on_order_or_history(pool_dir: Path) -> None:
    whole = StaticProblems(pool_dir, seed=1)
    expected = draw(whole, 0, 5)
    part = StaticProblems(pool_dir, seed=1)
    got = [part.problem(0, i, i) for i in (4, 3, 2, 1, 0)]
    assert got[::-1] == expected
    resumed = StaticProblems(pool_dir, seed=1)
    resumed.restore(part.state())
    assert resumed.coverage == part.coverage == 5 / len(part.env_ids)
    assert resumed.metrics()["pool"]["sha256"] == pool_sha256(pool_dir)


def test_sha256_binds_the_pool(pool_dir: Path, tmp_path: Path) -> None:
    sha = pool_sha256(pool_dir)
    assert pool_sha256(pool_dir / "envs") == sha
    problem_source(StaticPoolConfig(path=str(pool_dir), sha256=sha), seed=0)
    with pytest.raises(UserError, match="the recipe expects"):
        problem_source(StaticPoolConfig(path=str(pool_dir), sha256="0" * 64), seed=0)
    with pytest.raises(UserError, match="no environment pool"):
        StaticProblems(tmp_path, seed=0)
    state = StaticProblems(pool_dir, seed=0).state()
    with pytest.raises(UserError, match="changed since the run started"):
        StaticProblems(pool_dir, seed=0).restore({**state, "sha256": "f" * 64})


def test_groups_play_one_problem(pool_dir: Path, sandbox: Sandbox) -> None:
    source = StaticProblems(pool_dir, seed=3)
    drawn = draw(source, 0, 2)
    agent = scripted_roles("games").agent
    plays = play_step(agent, sandbox, source, drawn, 3, SamplingParams(seed=5),
                      EpisodeConfig(max_turns=10))
    assert [g.problem for g in plays.groups] == drawn
    for group in plays.groups:
        assert {t.env_id for t in group.trajectories} == {group.problem.env_id}
        assert {t.seed for t in group.trajectories} == {group.problem.seed}
        assert all(t.env_fault is None for t in group.trajectories)
        assert group.advantages is not None and len(group.advantages) == 3
    assert plays.stats.n_groups == 2 and plays.stats.n_samples == 6
