"""The designer's reward: hint-based regret and its variants.

Every variant is computed from the two matched arms of plays of one environment:

- ``regret`` (default): ``max(0, mean R(hinted) - mean R(unhinted))``.
- ``blend``: ``w_regret * clip(regret / regret_scale, 0, 1) + w_plateau * plateau(p)``, with
  ``p`` the UNHINTED solve rate (the agent's own competence is what the curriculum tracks;
  the hint only measures how learnable the task is).
- ``solve_rate``: ``plateau(p)`` alone (the paper's solve-rate ablation).
- ``learning_potential``: ``4 * p * (1 - p)`` of the unhinted solve rate ``p`` — the
  "learnability" score of Sampling For Learnability (Rutherford et al., 2024, "No Regrets:
  Investigating and Improving Regret Approximations for Curriculum Discovery"): the variance
  of a Bernoulli success, highest when the agent wins half the time. Scaled by 4 so it lies
  in [0, 1] like the other variants.

An invalid environment has no plays; it gets ``invalid_penalty`` (default -1.0) whatever the
variant, plus ``invalid_shaping`` times the share of ``progress_stages()`` it got through
(default 0: no shaping). Shaping is for models that rarely write a valid environment at all (a 135M
model): designs that fail at different stages then differ in reward, so a group of invalid
designs still carries a gradient towards validity. ``invalid_shaping`` below
``-invalid_penalty`` keeps every invalid design below every valid one (whose reward is at
least 0), and a design stopped for safety or a fault in play earns no credit.
``DesignerReward.describe()`` returns the settings so that outputs record them.
A run config's ``reward:`` block is one of these (``spade.config.RunConfig.reward``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from spade.rewards._returns import mean, plateau, regret, solve_rate


@cache
def progress_stages() -> tuple[str, ...]:
    """How far an invalid design can get: reply parsing, then the validator's own stages in
    the order they run. Anything else (safety, a fault in play) is progress 0."""
    from spade.validate._verdict import Stage

    return ("parse", *(s.value for s in Stage if s not in (Stage.SAFETY, Stage.DONE)))


class RewardVariant(StrEnum):
    """Designer reward variants."""

    REGRET = "regret"
    BLEND = "blend"
    SOLVE_RATE = "solve_rate"
    LEARNING_POTENTIAL = "learning_potential"


@dataclass(frozen=True)
class DesignerScore:
    """The designer reward of one environment with the quantities it was computed from.

    ``valid`` is False for invalid environments, whose other statistics are ``None``.
    """

    reward: float
    variant: RewardVariant
    valid: bool
    regret: float | None = None
    solve_rate_hinted: float | None = None
    solve_rate_unhinted: float | None = None
    mean_return_hinted: float | None = None
    mean_return_unhinted: float | None = None


class DesignerReward(BaseModel):
    """Configuration of the designer reward; call :meth:`score` or :meth:`invalid`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: RewardVariant = RewardVariant.REGRET
    #: Weight of the normalised regret term in ``blend``.
    w_regret: float = Field(default=0.4, ge=0.0)
    #: Weight of the plateau (solve-rate) term in ``blend``.
    w_plateau: float = Field(default=0.6, ge=0.0)
    #: Regret at which the ``blend`` regret term saturates at 1.
    regret_scale: float = Field(default=0.15, gt=0.0)
    #: Plateau band on the unhinted solve rate, and the width of its linear ramps.
    band: tuple[float, float] = (0.4, 0.6)
    ramp: float = Field(default=0.25, ge=0.0)
    #: Reward of an environment that failed validation (or could not be played).
    invalid_penalty: float = -1.0
    #: Added to ``invalid_penalty`` in proportion to the share of ``progress_stages()`` passed.
    invalid_shaping: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _band_ordered(self) -> DesignerReward:
        low, high = self.band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"plateau band {self.band} must satisfy 0 <= low <= high <= 1")
        if self.invalid_shaping and self.invalid_penalty + self.invalid_shaping >= 0.0:
            raise ValueError(f"invalid_shaping {self.invalid_shaping} would pay an invalid "
                             f"design as much as a valid one (invalid_penalty "
                             f"{self.invalid_penalty}): keep their sum below 0")
        return self

    def describe(self) -> dict[str, Any]:
        """Plain settings for metrics and result records (includes the invalid penalty)."""
        return self.model_dump(mode="json")

    def invalid(self, stage: str | None = None) -> DesignerScore:
        """The score of an invalid environment that failed at ``stage`` (a
        ``progress_stages()`` name; anything else, or None, is no progress)."""
        stages = progress_stages()
        passed = stages.index(stage) if stage in stages else 0
        reward = self.invalid_penalty + self.invalid_shaping * passed / len(stages)
        return DesignerScore(reward=reward, variant=self.variant, valid=False)

    def score(
        self,
        hinted_returns: Sequence[float],
        unhinted_returns: Sequence[float],
        *,
        success_threshold: float = 1.0,
    ) -> DesignerScore:
        """Score a valid environment from its matched hinted and unhinted returns."""
        r = regret(hinted_returns, unhinted_returns)
        p_h = solve_rate(hinted_returns, success_threshold)
        p_u = solve_rate(unhinted_returns, success_threshold)
        bump = plateau(p_u, low=self.band[0], high=self.band[1], ramp=self.ramp)
        if self.variant is RewardVariant.REGRET:
            reward = r
        elif self.variant is RewardVariant.BLEND:
            reward = self.w_regret * min(1.0, r / self.regret_scale) + self.w_plateau * bump
        elif self.variant is RewardVariant.SOLVE_RATE:
            reward = bump
        else:
            reward = 4.0 * p_u * (1.0 - p_u)
        return DesignerScore(
            reward=reward,
            variant=self.variant,
            valid=True,
            regret=r,
            solve_rate_hinted=p_h,
            solve_rate_unhinted=p_u,
            mean_return_hinted=mean(hinted_returns),
            mean_return_unhinted=mean(unhinted_returns),
        )
