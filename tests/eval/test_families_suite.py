"""The ``families`` suite: held-out instances of the starter families, played through the
training episode runner in the real sandbox and scored by the environments themselves."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from spade.eval import _protocol
from spade.eval.data import DataDir
from spade.eval.providers._base import Request
from spade.eval.providers._policy import PolicyProvider
from spade.eval.suites import SUITES

from spade.errors import UserError
from spade.families import is_heldout_seed, list_families
from spade.policy import ScriptedPolicy


def _suite(tmp_path: Path, limit: int | None = None, **extra: Any) -> Any:
    cls = SUITES.get("families")
    suite = cls(_protocol.build("families", {"limit": limit}, extra), 0)
    return suite, suite.load(DataDir(tmp_path))


def _requests(suite: Any, items: list[Any]) -> list[Request]:
    return [Request(suite, it, 0, suite.prompt(it, 0), suite.protocol.sampling(0))
            for it in items]


def _question(messages: list[dict[str, Any]]) -> str:
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def test_items_are_heldout_seeds_with_the_families_in_turn(tmp_path: Path) -> None:
    suite, loaded = _suite(tmp_path, limit=24)
    items = loaded.items
    assert len(items) == 24 and len({it.key for it in items}) == 24
    assert all(is_heldout_seed(int(it.data["seed"])) for it in items)
    assert set(Counter(it.group for it in items).values()) == {24 // len(list_families())}
    assert all(Path(f).is_file() for f in loaded.files)
    assert suite.protocol.name == "custom" and not suite.comparable()
    _, again = _suite(tmp_path, limit=24)
    assert [it.key for it in again.items] == [it.key for it in items]  # deterministic
    _, full = _suite(tmp_path)
    assert [it.key for it in full.items[:24]] == [it.key for it in items]


def test_a_keyed_provider_cannot_play(tmp_path: Path) -> None:
    from spade.eval.providers import ProviderOptions, make_provider

    suite, loaded = _suite(tmp_path, limit=1)
    with pytest.raises(UserError, match="token by token"):
        suite.play(_requests(suite, loaded.items), make_provider("oracle", ProviderOptions()))


@pytest.mark.bwrap
def test_scores_are_the_environments_own_verdicts(tmp_path: Path) -> None:
    """A policy that adds the numbers of the question wins every play; one that is off by
    one loses every play: the score is what the environment said, per episode."""
    suite, loaded = _suite(tmp_path, limit=6, families=["sum_numbers"])

    def total(messages: list[dict[str, Any]]) -> int:
        return sum(int(n) for n in re.findall(r"\d+", _question(messages).split("?")[0]))

    def right(messages: list[dict[str, Any]]) -> str:
        return "\\boxed{" + str(total(messages)) + "}"

    def wrong(messages: list[dict[str, Any]]) -> str:
        return "\\boxed{" + str(total(messages) + 1) + "}"

    try:
        for respond, expected in ((right, 1.0), (wrong, 0.0)):
            provider = PolicyProvider(ScriptedPolicy(respond), "scripted", {}, 8)
            played = suite.play(_requests(suite, loaded.items), provider)
            assert [s.score for _, s in played] == [expected] * 6
            for completion, scored in played:
                assert json.loads(completion)["replies"]
                assert scored.details["observation"].startswith("What is ")
                assert scored.details["turns"] == 1
    finally:
        suite.close()
