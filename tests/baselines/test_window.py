"""The sliding-window difficulty controller against hand-computed traces."""

from __future__ import annotations

import random

import pytest

from spade.baselines import SlidingWindow, WindowConfig
from spade.errors import UserError


def _play(c: SlidingWindow, env: str, difficulty: int, wins: str) -> list[bool]:
    return [c.record(env, difficulty, w == "1") for w in wins]


def test_hand_trace_small_constants() -> None:
    # tau_num 4, tau_acc 0.75, width 3, computed by hand:
    c = SlidingWindow(["A", "B"], WindowConfig(tau_num=4, tau_acc=0.75, width=3))
    assert c.window("A") == (0, 0)
    assert _play(c, "A", 0, "1110") == [False, False, False, True]  # 3/4 >= .75: high 1
    assert c.window("A") == (0, 1)  # low = max(0, 1 - 3 + 1) = 0
    assert _play(c, "A", 0, "1111") == [False] * 4  # below high: not counted
    assert c.windows["A"].attempts == 0
    assert _play(c, "A", 1, "1001") == [False] * 4  # 2/4 < .75: stays, counters reset
    assert c.window("A") == (0, 1) and c.windows["A"].attempts == 0
    assert _play(c, "A", 1, "1111")[-1] and c.window("A") == (0, 2)  # low = max(0, 0)
    assert _play(c, "A", 2, "0111")[-1] and c.window("A") == (1, 3)  # low = max(0, 1)
    assert _play(c, "A", 3, "1111")[-1] and c.window("A") == (2, 4)  # low = max(1, 2)
    assert c.window("B") == (0, 0)  # windows are per environment


def test_paper_constants_threshold_and_width() -> None:
    c = SlidingWindow(["E"])  # tau_num 128, tau_acc 0.9, width 4
    assert (c.config.tau_num, c.config.tau_acc, c.config.width) == (128, 0.9, 4)
    # 115/128 = 0.898 < 0.9: no move; the counters restart
    assert not any(_play(c, "E", 0, "1" * 115 + "0" * 13))
    assert c.window("E") == (0, 0) and c.windows["E"].attempts == 0
    # 116/128 = 0.906: move on the 128th attempt exactly
    moves = _play(c, "E", 0, "0" * 12 + "1" * 116)
    assert moves.index(True) == 127 and c.window("E") == (0, 1)
    for high in range(1, 6):
        _play(c, "E", high, "1" * 128)
    assert c.window("E") == (3, 6)  # high 6, low = max(low, 6 - 4 + 1) = 3


def test_state_round_trip_mid_count() -> None:
    c = SlidingWindow(["E"], WindowConfig(tau_num=10, tau_acc=0.5))
    _play(c, "E", 0, "111111111")  # 9 of 10 attempts
    restored = SlidingWindow.restore(c.state())
    assert restored.state() == c.state()
    assert restored.record("E", 0, True) and restored.window("E") == (0, 1)
    with pytest.raises(UserError, match="difficulty-controller state"):
        SlidingWindow.restore({"windows": {}})


def test_sample_is_uniform_over_the_window() -> None:
    c = SlidingWindow(["E"], WindowConfig(tau_num=1, tau_acc=1.0, width=4))
    for high in range(6):
        c.record("E", high, True)
    assert c.window("E") == (3, 6)
    rng = random.Random(0)
    draws = [c.sample("E", rng) for _ in range(4000)]
    assert set(draws) == {3, 4, 5, 6}
    assert all(abs(draws.count(d) / 4000 - 0.25) < 0.03 for d in range(3, 7))


def test_rejects_bad_config() -> None:
    with pytest.raises(UserError):
        SlidingWindow([])
    with pytest.raises(ValueError):
        WindowConfig(tau_acc=1.5)
