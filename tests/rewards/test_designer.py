"""Designer reward variants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from spade.rewards import DesignerReward, RewardVariant, plateau

wins = st.integers(min_value=1, max_value=16).flatmap(
    lambda n: st.tuples(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n),
                        st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n))
)


def test_default_is_regret_with_penalty_recorded() -> None:
    cfg = DesignerReward()
    assert cfg.variant is RewardVariant.REGRET
    s = cfg.score([1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0])
    assert s.reward == pytest.approx(0.5) and s.regret == pytest.approx(0.5)
    assert s.solve_rate_hinted == 0.75 and s.solve_rate_unhinted == 0.25
    bad = cfg.invalid()
    assert bad.reward == -1.0 and not bad.valid and bad.regret is None
    assert cfg.describe()["invalid_penalty"] == -1.0
    assert DesignerReward(invalid_penalty=0.0).invalid().reward == 0.0


def test_blend_worked_example() -> None:
    cfg = DesignerReward(variant="blend")
    # regret 0.5 saturates the regret term; unhinted solve rate 0.25 -> plateau 0.4
    s = cfg.score([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    assert s.reward == pytest.approx(0.4 * 1.0 + 0.6 * 0.4)
    # regret 0.075 = half the scale; unhinted solve rate 0.5 sits in the band
    s = cfg.score([0.65, 1.0], [0.5, 1.0])
    assert s.reward == pytest.approx(0.4 * 0.5 + 0.6 * 1.0)


def test_solve_rate_and_learning_potential() -> None:
    h, u = [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]
    assert DesignerReward(variant="solve_rate").score(h, u).reward == 1.0
    assert DesignerReward(variant="learning_potential").score(h, u).reward == 1.0
    u = [1.0, 0.0, 0.0, 0.0]
    assert DesignerReward(variant="solve_rate").score(h, u).reward == pytest.approx(plateau(0.25))
    assert DesignerReward(variant="learning_potential").score(h, u).reward == pytest.approx(0.75)
    assert DesignerReward(variant="learning_potential").score(h, h).reward == 0.0


@given(wins, st.sampled_from(list(RewardVariant)))
def test_every_variant_in_unit_range(arms: tuple[list[float], list[float]],
                                     variant: RewardVariant) -> None:
    s = DesignerReward(variant=variant).score(*arms)
    assert 0.0 <= s.reward <= 1.0 + 1e-12
    assert s.valid and s.variant is variant


def test_config_is_validated() -> None:
    with pytest.raises(ValidationError):
        DesignerReward(variant="nope")
    with pytest.raises(ValidationError):
        DesignerReward(band=(0.7, 0.6))
    with pytest.raises(ValidationError):
        DesignerReward(surprise=1)


def test_the_run_config_reward_block_is_a_designer_reward() -> None:
    from spade.config import RunConfig

    cfg = RunConfig.model_validate({"reward": {"variant": "blend", "band": [0.3, 0.7]}}).reward
    assert cfg.variant is RewardVariant.BLEND and cfg.band == (0.3, 0.7)
    assert isinstance(cfg, DesignerReward)


def test_invalid_shaping_orders_invalid_designs_by_how_far_they_got() -> None:
    from spade.rewards._designer import progress_stages

    PROGRESS = progress_stages()

    flat = DesignerReward()
    assert {flat.invalid(s).reward for s in (*PROGRESS, "safety", None)} == {-1.0}
    shaped = DesignerReward(variant="learning_potential", invalid_shaping=0.9)
    rewards = [shaped.invalid(s).reward for s in PROGRESS]
    assert rewards == sorted(rewards) and len(set(rewards)) == len(PROGRESS)
    assert rewards[0] == -1.0 and max(rewards) < 0.0
    # hostile or crashing designs earn nothing; every valid design is paid at least 0
    assert shaped.invalid("safety").reward == shaped.invalid("play_fault").reward == -1.0
    assert shaped.score([0.0, 0.0], [0.0, 0.0]).reward >= 0.0 > max(rewards)
    with pytest.raises(ValueError, match="invalid_shaping"):
        DesignerReward(invalid_shaping=1.0)
