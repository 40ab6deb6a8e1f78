"""Summaries are derived from the real code, not from a file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade.memory import summarize_env

EXAMPLES = Path(__file__).resolve().parents[2] / "spade" / "envs" / "examples"


def test_game_summary_from_source() -> None:
    source = '''
"""Module doc."""
from spade.envs import TextEnv

class LockPickEnv(TextEnv):
    """Open a combination lock by listening to the clicks.

    More text."""
    max_turns = 12
    def reset(self, seed=None, options=None):
        return "A lock with 3 dials.", {}
    def step(self, action):
        return "", 0.0, True, False, {}
    def solution(self):
        return ["123"]
'''
    text = summarize_env(source, first_observation="A lock   with 3\ndials.")
    first, obs = text.splitlines()
    assert first.startswith("LockPickEnv(TextEnv): Open a combination lock by listening")
    assert "max_turns=12" in first and "has solution()" in first and "lines" in first
    assert "More text" not in text
    assert obs == "First observation: A lock with 3 dials."


def test_tool_summary_lists_tools() -> None:
    source = (EXAMPLES / "refund_desk.py").read_text()
    text = summarize_env(source)
    assert text.startswith("RefundDeskEnv(ToolEnv): ")
    tools_line = next(line for line in text.splitlines() if line.startswith("Tools: "))
    assert "find_orders(customer: str) - " in tools_line
    assert " | get_order(order_id: str) - " in tools_line
    assert "max_turns=" in text and "has solution()" in text


def test_tool_docstrings_and_signatures() -> None:
    source = '''
from spade.envs import ToolEnv, tool

class DeskEnv(ToolEnv):
    @tool
    def lookup(self, order_id: str, verbose: bool = False) -> str:
        """Find an order.

        Longer text."""
        return ""

    @tool()
    def refund(self, order_id: str) -> str:
        return ""

    def check(self) -> float:
        return 0.0
'''
    lines = summarize_env(source).splitlines()
    assert lines[0] == f"DeskEnv(ToolEnv) [{len(source.splitlines())} lines]"
    assert lines[1] == (
        "Tools: lookup(order_id: str, verbose: bool) - Find an order. | refund(order_id: str)"
    )


@pytest.mark.parametrize(
    "path", sorted(p for p in EXAMPLES.glob("*.py") if p.name != "__init__.py"),
    ids=lambda p: p.stem,
)
def test_every_bundled_example_summarises(path: Path) -> None:
    text = summarize_env(path.read_text())
    assert "Env(" in text.splitlines()[0]


def test_unparseable_and_classless() -> None:
    assert summarize_env("def (:\n") == "Unparseable environment source (1 lines)."
    assert summarize_env("x = 1\ny = 2\n").startswith("Module without an *Env class")
    long_obs = "word " * 200
    assert len(summarize_env("class AEnv:\n    pass\n", first_observation=long_obs)) < 400
