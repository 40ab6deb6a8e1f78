"""The prompt pass's grouping of a batch by shared opening."""

from __future__ import annotations

from spade.policy._openings import MIN_SHARED, plan_openings

SYSTEM = list(range(1000, 1000 + 95))  # an agent system prompt


def test_one_opening_for_a_batch_that_shares_its_system_prompt() -> None:
    prompts = [SYSTEM + [k, k + 1, k + 2] * (10 + k % 3) for k in range(8)]
    plan = plan_openings(prompts)
    assert plan is not None and plan.lengths == [95] and sorted(plan.groups[0]) == list(range(8))
    assert plan.cost(prompts) < 0.5 * len(prompts) * max(map(len, prompts))


def test_demonstrations_group_their_own_items() -> None:
    """Two datasets, each item opening with its dataset's long demonstration."""
    a, b = list(range(5000, 5200)), list(range(6000, 6150))
    prompts = [a + [k] * 20 for k in range(4)] + [b + [k] * 30 for k in range(3)]
    plan = plan_openings(prompts)
    assert plan is not None
    assert sorted(sorted(g) for g in plan.groups) == [[0, 1, 2, 3], [4, 5, 6]]
    assert sorted(plan.lengths) == [150, 200]


def test_every_row_keeps_a_token_of_its_own() -> None:
    prompts = [[*SYSTEM, 1], [*SYSTEM, 1, 2], SYSTEM + [3] * 40]
    plan = plan_openings(prompts)
    assert plan is not None
    for rows, n in zip(plan.groups, plan.lengths, strict=True):
        assert all(len(prompts[r]) > n and prompts[r][:n] == prompts[rows[0]][:n] for r in rows)


def test_no_plan_where_one_pass_costs_the_same() -> None:
    assert plan_openings([SYSTEM]) is None  # one row
    assert plan_openings([[1] * 30, [2] * 30, [3] * 30]) is None  # nothing shared
    short = list(range(MIN_SHARED - 1))
    assert plan_openings([short + [1] * 5, short + [2] * 5]) is None  # too short to share
    assert plan_openings([[7], [7, 8]]) is None  # a one-token prompt
