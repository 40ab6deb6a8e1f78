"""ToolEnv: tool discovery, call_tool error texts, result text, and the answer step."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade.envs import TextEnv, ToolEnv, tool, tool_result_text


class CounterEnv(ToolEnv):
    """A counter the agent must bring to a seeded target."""

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.value = 0
        self.target = self.rng.randint(5, 50)
        return f"Bring the counter to the target in {self.target // 100 + 1} call.", {}

    @tool
    def add(self, amount: int, note: str | None = None) -> dict[str, int]:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        self.value += amount
        return {"value": self.value}

    @tool
    def scale(self, factor: float) -> float:
        """Multiply the counter."""
        self.value = int(self.value * factor)
        return self.value * 1.0

    @tool
    def explode(self, how: Literal["value", "key"] = "value") -> str:
        """Always fails."""
        raise (ValueError("bad things") if how == "value" else KeyError("k"))

    @tool
    def nothing(self) -> None:
        """Returns nothing."""

    def check(self) -> float:
        return float(self.value == self.target and self.submitted_answer == str(self.target))

    def solution(self) -> list[Any]:
        return [{"name": "add", "arguments": {"amount": self.target}}, str(self.target)]


def make(seed: int = 3) -> CounterEnv:
    env = CounterEnv()
    env.reset(seed=seed)
    return env


def test_tools_are_schemas_in_definition_order() -> None:
    names = [t["function"]["name"] for t in CounterEnv.tools()]
    assert names == ["add", "scale", "explode", "nothing"]
    assert CounterEnv.tools() == make().tools()
    add = CounterEnv.tools()[0]["function"]
    assert add["description"] == "Add to the counter."
    assert add["parameters"]["required"] == ["amount"]
    assert [s.name for s in CounterEnv.tool_specs()] == names


def test_inheritance_override_and_removal() -> None:
    class Child(CounterEnv):
        @tool
        def add(self, amount: int, twice: bool = False) -> dict[str, int]:
            """Add, maybe twice."""
            return super().add(amount * (2 if twice else 1))

        scale = None  # type: ignore[assignment]

        @tool
        def extra(self) -> str:
            """New tool."""
            return "x"

    names = [t["function"]["name"] for t in Child.tools()]
    assert names == ["explode", "nothing", "add", "extra"]
    assert "twice" in Child.tools()[2]["function"]["parameters"]["properties"]
    env = Child()
    env.reset(seed=0)
    assert env.call_tool("add", {"amount": 2, "twice": True}) == '{"value": 4}'
    assert env.call_tool("scale", {"factor": 2}).startswith("Error: unknown tool 'scale'")
    # the parent class keeps its own tools
    assert [t["function"]["name"] for t in CounterEnv.tools()][:2] == ["add", "scale"]


def test_reserved_and_duplicate_names_rejected() -> None:
    with pytest.raises(TypeError, match="cannot be a tool"):

        class Bad(ToolEnv):
            @tool
            def check(self) -> float:  # type: ignore[override]
                """No."""
                return 0.0

    with pytest.raises(TypeError, match="two tools are named 'same'"):

        class Twice(ToolEnv):
            @tool(name="same")
            def a(self) -> str:
                return ""

            @tool(name="same")
            def b(self) -> str:
                return ""

            def check(self) -> float:
                return 0.0


def test_check_is_abstract() -> None:
    class NoCheck(ToolEnv):
        pass

    with pytest.raises(TypeError, match="check"):
        NoCheck()


def test_call_tool_results_and_coercion() -> None:
    env = make()
    assert env.call_tool("add", {"amount": "4"}) == '{"value": 4}'
    assert env.call_tool("add", '{"amount": 1}') == '{"value": 5}'
    assert env.call_tool("scale", {"factor": 2}) == "10.0"
    assert env.call_tool("nothing", None) == "null"
    assert env.call_tool("nothing", "") == "null"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("nope", {}, "Error: unknown tool 'nope'. Available tools: add, scale, explode, nothing."),
        ("add", {}, "Error: invalid arguments for add: missing required argument(s): amount."),
        ("add", {"amount": 1, "x": 2}, "unexpected argument(s): x (expected: amount, note)"),
        ("add", {"amount": "lots"}, "argument 'amount': expected integer, got string \"lots\""),
        ("add", "{broken", "Error: arguments of add are not valid JSON"),
        ("add", [1], "Error: arguments of add must be a JSON object."),
        ("explode", {}, "Error: ValueError: bad things"),
        ("explode", {"how": "key"}, "Error: KeyError: 'k'"),
        ("explode", {"how": "other"}, 'is not one of "value", "key"'),
    ],
)
def test_bad_calls_return_error_text(name: str, arguments: Any, expected: str) -> None:
    env = make()
    out = env.call_tool(name, arguments)
    assert isinstance(out, str)
    assert out.startswith("Error: ")
    assert expected in out
    assert env.value == 0  # nothing ran


def test_result_text_conversion() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert tool_result_text("plain") == "plain"
    assert tool_result_text({"é": [1, 2.5, None, True]}) == '{"é": [1, 2.5, null, true]}'
    assert tool_result_text((1, 2)) == "[1, 2]"
    assert tool_result_text(np.int64(7)) == "7"
    assert (
        tool_result_text({"a": np.float32(0.5), "b": np.arange(3)}) == '{"a": 0.5, "b": [0, 1, 2]}'
    )
    assert tool_result_text([{3, 1, 2}]) == "[[1, 2, 3]]"
    assert tool_result_text(Thing()) == "a thing"


@pytest.mark.parametrize(
    "reply",
    [
        "<answer>{t}</answer>",
        "{t}",
        "<think>maybe 0</think><answer> {t} </answer>",
        "<answer>0</answer> no wait <answer>{t}</answer>",
    ],
)
def test_step_scores_the_final_answer(reply: str) -> None:
    env = make()
    env.call_tool("add", {"amount": env.target})
    obs, reward, terminated, truncated, info = env.step(reply.format(t=env.target))
    assert env.submitted_answer == str(env.target)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert type(reward) is float and type(terminated) is bool
    assert isinstance(obs, str) and info == {"answer": str(env.target)}


def test_wrong_answer_or_state_fails_and_reset_clears() -> None:
    env = make()
    assert env.step(str(env.target))[1] == 0.0  # state not reached
    env.reset(seed=3)
    assert env.submitted_answer is None
    env.call_tool("add", {"amount": env.target})
    assert env.step("<answer>nope</answer>")[1] == 0.0


def test_seeding_is_per_instance() -> None:
    a, b = make(11), make(11)
    assert a.target == b.target
    assert len({make(s).target for s in range(20)}) > 5
    assert issubclass(CounterEnv, TextEnv)


_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_KEYS = st.sampled_from(["amount", "note", "factor", "how", "x", ""]) | st.text(max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(["add", "scale", "explode", "nothing", "check", "reset", "", "ADD"]),
    arguments=st.dictionaries(_KEYS, _ANY_JSON, max_size=3) | _ANY_JSON,
)
def test_call_tool_never_raises(name: str, arguments: Any) -> None:
    env = make()
    assert isinstance(env.call_tool(name, arguments), str)


def test_call_tool_absurd_arguments() -> None:
    env = make()
    assert env.call_tool("add", {"amount": 10**5000}).startswith("Error: ")
    assert env.call_tool("scale", {"factor": 10**5000}).startswith("Error: ")
    assert env.call_tool("add", {"amount": "9" * 5000}).startswith("Error: ")
    assert env.call_tool("add", '{"amount": ' + "[" * 50_000).startswith("Error: ")
    assert env.call_tool("add", {"amount": 2, "note": "[" * 50_000}) == '{"value": 2}'
