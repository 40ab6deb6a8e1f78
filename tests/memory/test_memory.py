"""Memory: classification, sampling, eviction, persistence, determinism."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade.errors import UserError
from spade.memory import Memory, MemoryConfig, MemoryEntry, Standing


def entry(env_id: str, p_h: float, p_u: float, cycle: int = 0, **kw: object) -> MemoryEntry:
    fields: dict = dict(env_id=env_id, source=f"class {env_id}Env: pass\n", hint="h",
                        skill="logic", doc_id="d:1", solve_rate_hinted=p_h,
                        solve_rate_unhinted=p_u, regret=max(0.0, p_h - p_u), cycle=cycle,
                        summary=f"{env_id} summary")
    fields.update(kw)
    return MemoryEntry(**fields)


def test_standing() -> None:
    m = Memory()
    assert m.standing(entry("a", 0.8, 0.3)) is Standing.FRONTIER
    assert m.standing(entry("b", 1.0, 0.95)) is Standing.TOO_EASY
    assert m.standing(entry("c", 0.0, 0.0)) is Standing.TOO_HARD
    assert m.standing(entry("d", 0.5, 0.5)) is Standing.OTHER  # no regret
    # regret 1.0 (always solved with the hint, never without) is rewarded by the designer
    # reward, so it is the best positive, not "other"
    assert m.standing(entry("e", 1.0, 0.0)) is Standing.FRONTIER
    assert m.standing(entry("f", 0.85, 0.85)) is Standing.OTHER  # no regret at the top edge


def test_regret_one_is_shown_and_kept() -> None:
    m = Memory(MemoryConfig(capacity=2, negative_quota=0.0))
    m.add(entry("best", 1.0, 0.0))
    m.add(entry("mid", 0.6, 0.3))
    assert [e.env_id for e in m.sample(1, random.Random(0)).positives] == ["best"]
    evicted = m.add(entry("new", 0.7, 0.2))
    assert [e.env_id for e in evicted] == ["mid"]  # the lowest regret goes, not regret 1.0


def test_sample_positives_by_regret_and_negatives_by_kind() -> None:
    m = Memory()
    for i, (p_h, p_u) in enumerate([(0.9, 0.1), (0.6, 0.5), (0.8, 0.2), (1.0, 0.9),
                                    (1.0, 1.0), (0.0, 0.0), (0.05, 0.0)]):
        m.add(entry(f"e{i}", p_h, p_u))
    s = m.sample(2, random.Random(0))
    assert [e.env_id for e in s.positives] == ["e0", "e2"]  # regrets 0.8 and 0.6
    kinds = sorted((n.standing.value, n.entry.env_id in {"e3", "e4", "e5", "e6"})
                   for n in s.negatives)
    assert kinds == [("too_easy", True), ("too_hard", True)]
    s3 = m.sample(3, random.Random(0), k_negative=5)
    assert len(s3.positives) == 3 and len(s3.negatives) == 4  # only 4 negatives exist
    assert m.sample(0, random.Random(0)).positives == []


def test_ties_rotate_with_the_seed() -> None:
    m = Memory()
    for i in range(6):
        m.add(entry(f"t{i}", 0.7, 0.2))
    picks = {tuple(e.env_id for e in m.sample(2, random.Random(seed)).positives)
             for seed in range(20)}
    assert len(picks) > 3
    a = m.sample(2, random.Random(5))
    assert a == m.sample(2, random.Random(5))


def test_negatives_top_up_from_the_other_side() -> None:
    m = Memory()
    for i in range(4):
        m.add(entry(f"easy{i}", 1.0, 1.0))
    s = m.sample(1, random.Random(1), k_negative=3)
    assert [n.standing for n in s.negatives] == [Standing.TOO_EASY] * 3


def test_eviction_lowest_regret_frontier_first() -> None:
    m = Memory(MemoryConfig(capacity=3, negative_quota=0.34))  # quota: 1 negative
    m.add(entry("low", 0.4, 0.3, cycle=0))   # regret 0.1
    m.add(entry("high", 0.9, 0.2, cycle=0))  # regret 0.7
    m.add(entry("easy", 1.0, 1.0, cycle=1))
    evicted = m.add(entry("mid", 0.6, 0.2, cycle=2))  # regret 0.4
    assert [e.env_id for e in evicted] == ["low"]
    evicted = m.add(entry("easy2", 1.0, 0.95, cycle=3))  # 2 negatives > quota 1
    assert [e.env_id for e in evicted] == ["easy"]
    assert [e.env_id for e in m.entries] == ["high", "mid", "easy2"]


def test_replace_moves_to_newest() -> None:
    m = Memory()
    m.add(entry("a", 0.5, 0.2))
    m.add(entry("b", 0.5, 0.2))
    m.add(entry("a", 0.9, 0.2, cycle=4))
    assert [e.env_id for e in m.entries] == ["b", "a"] and m.entries[1].cycle == 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=40),
       st.integers(min_value=1, max_value=8))
def test_bounded_and_roundtrip(rates: list[tuple[float, float]], capacity: int) -> None:
    m = Memory(MemoryConfig(capacity=capacity))
    for i, (p_h, p_u) in enumerate(rates):
        m.add(entry(f"x{i}", p_h, p_u, cycle=i // 3, embedding=(0.1 * i, 1.0)))
        assert len(m) <= capacity
    saved = json.loads(json.dumps(m.to_dict()))
    back = Memory.from_dict(saved)
    assert back.entries == m.entries and back.config == m.config
    assert back.sample(2, random.Random(9)) == m.sample(2, random.Random(9))


def test_corrupt_state_is_a_user_error() -> None:
    with pytest.raises(UserError):
        Memory.from_dict({"version": 99})
    with pytest.raises(UserError, match="corrupt memory entry"):
        Memory.from_dict({"version": 1, "config": {}, "entries": [{"env_id": "x"}]})
    with pytest.raises(UserError, match="config"):
        Memory.from_dict({"version": 1, "config": {"capacity": 0}, "entries": []})


def test_entry_validation() -> None:
    with pytest.raises(ValueError):
        entry("bad", 1.5, 0.0)
    with pytest.raises(ValueError):
        entry("bad", 0.5, 0.0, regret=-0.1)


def test_ranked_by_learning_potential_an_entry_without_regret_is_a_positive() -> None:
    """Where hints do not help no entry earns regret; ranked by learning potential the
    partly solved ones are still shown, the most uncertain first."""
    import random as _random

    from spade.memory import Memory, MemoryConfig, MemoryEntry, Standing

    def entry(env_id: str, p: float) -> MemoryEntry:
        return MemoryEntry(env_id=env_id, source="", hint="", skill="math", doc_id=None,
                           solve_rate_hinted=p, solve_rate_unhinted=p, regret=0.0, cycle=0,
                           summary=env_id)

    entries = [entry("half", 0.5), entry("low", 0.1), entry("never", 0.0)]
    by_regret, by_lp = Memory(), Memory(MemoryConfig(rank_by="learning_potential"))
    for e in entries:
        by_regret.add(e)
        by_lp.add(e)
    assert by_regret.sample(2, _random.Random(0)).positives == []
    assert [e.env_id for e in by_lp.sample(2, _random.Random(0)).positives] == ["half", "low"]
    assert by_lp.standing(entries[2]) is Standing.TOO_HARD
    assert by_lp.worth(entries[1]) == 4 * 0.1 * 0.9
