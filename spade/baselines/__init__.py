"""Fixed-environment baselines: the pools SPADE is compared against, as agent-only training.

Three problem families, each an agent-only source of GRPO groups (G plays of one problem):

- RLVE (``rlve-gym``, import name ``Gym``): any installed environment id becomes a SPADE
  game, ``rlve-<id>-d<difficulty>``, whose generated source runs in the sandbox like a
  designed environment. Difficulty follows RLVE's sliding-window controller
  (:class:`SlidingWindow`), whose state is checkpointed with the run.
- Reasoning Gym: a dataset item per play, rewarded by the dataset's own ``score_answer``.
- A static pool exported by ``spade selfplay`` with a frozen designer, drawn without
  replacement and identified by its sha256.

    source = problem_source(RlveConfig(), seed=0)
    drawn = [source.problem(step, i, slot) for i, slot in ...]   # or draw(source, step, n)
    plays = play_step(policy, sandbox, source, drawn, group_size, params, EpisodeConfig(...))
    metrics = source_step_metrics(step, source, plays)
"""

from __future__ import annotations

from spade.baselines._catalog import PAPER_ENVS, RlveSpec, rlve_catalog, rlve_spec
from spade.baselines._config import (
    FixedEnvConfig,
    ReasoningGymConfig,
    RlveConfig,
    StaticPoolConfig,
    problem_source,
)
from spade.baselines._problems import (
    Problem,
    ProblemSource,
    RgProblems,
    RlveProblems,
    StaticProblems,
    draw,
    pool_sha256,
)
from spade.baselines._rg import RgDataset, rg_source
from spade.baselines._rlve import parse_rlve_env_id, rlve_env_id, rlve_source
from spade.baselines._rollout import Group, StepPlays, play_step, source_step_metrics
from spade.baselines._window import SlidingWindow, Window, WindowConfig

__all__ = [
    "PAPER_ENVS",
    "FixedEnvConfig",
    "Group",
    "Problem",
    "ProblemSource",
    "ReasoningGymConfig",
    "RgDataset",
    "RgProblems",
    "RlveConfig",
    "RlveProblems",
    "RlveSpec",
    "SlidingWindow",
    "StaticPoolConfig",
    "StaticProblems",
    "StepPlays",
    "Window",
    "WindowConfig",
    "draw",
    "parse_rlve_env_id",
    "play_step",
    "pool_sha256",
    "problem_source",
    "rg_source",
    "rlve_catalog",
    "rlve_env_id",
    "rlve_source",
    "rlve_spec",
    "source_step_metrics",
]
