"""Rewards for both roles: returns, hint-based regret, designer reward variants,
GRPO group advantages with zero-variance accounting.

Typical use in a cycle::

    cfg = DesignerReward(variant="blend")
    score = cfg.score(hinted_returns, unhinted_returns)  # or cfg.invalid()
    agent = grouped_advantages(agent_groups(unhinted_by_env, hinted_by_env))
    designer = grouped_advantages({prompt_id: [s.reward for s in scores], ...})
"""

from __future__ import annotations

from spade.rewards._advantages import (
    ZERO_TOL,
    AdvantageConfig,
    Arm,
    GroupAdvantages,
    GroupStats,
    advantages_for_groups,
    agent_groups,
    group_advantages,
    grouped_advantages,
    is_zero_variance,
)
from spade.rewards._designer import DesignerReward, DesignerScore, RewardVariant
from spade.rewards._returns import (
    RETURN_BOUNDS,
    episode_return,
    is_win,
    mean,
    plateau,
    regret,
    solve_rate,
)

__all__ = [
    "RETURN_BOUNDS",
    "ZERO_TOL",
    "AdvantageConfig",
    "Arm",
    "DesignerReward",
    "DesignerScore",
    "GroupAdvantages",
    "GroupStats",
    "RewardVariant",
    "advantages_for_groups",
    "agent_groups",
    "episode_return",
    "group_advantages",
    "grouped_advantages",
    "is_win",
    "is_zero_variance",
    "mean",
    "plateau",
    "regret",
    "solve_rate",
]
