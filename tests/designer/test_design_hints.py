"""Hint sources: from the reply, from the same policy, from an external chat model."""

from __future__ import annotations

import pytest

from spade.designer import (
    DesignParse,
    HintSource,
    ParseFailure,
    hint_writer_messages,
    obtain_hints,
    parse_design,
)
from spade.errors import UserError
from spade.policy import SamplingParams, ScriptedPolicy

ENV_A = "from spade.envs import TextEnv\n\nclass AlphaEnv(TextEnv):\n    pass\n"
ENV_B = "from spade.envs import ToolEnv\n\nclass BetaEnv(ToolEnv):\n    pass\n"


class CountingPolicy(ScriptedPolicy):
    """The scripted policy, counting batched chat calls and their sizes."""

    def __init__(self, respond) -> None:
        super().__init__(respond)
        self.batches: list[int] = []

    def chat(self, conversations, params):
        self.batches.append(len(conversations))
        return super().chat(conversations, params)


def _writer(messages) -> str:
    code = messages[-1]["content"]
    name = "AlphaEnv" if "AlphaEnv" in code else "BetaEnv"
    return f"<think>read it</think><hint>For {name}, work backwards from the goal.</hint>"


def _designs() -> list[DesignParse]:
    return [
        parse_design(f"```python\n{ENV_A}```", require_hint=False),
        parse_design("no code here", require_hint=False),
        parse_design(f"```python\n{ENV_B}```", require_hint=False),
    ]


def test_designer_source_returns_designs_unchanged() -> None:
    designs = [parse_design(f"```python\n{ENV_A}```\n<hint>h</hint>")]
    assert obtain_hints(designs, "designer") == designs


@pytest.mark.parametrize("source", [HintSource.SELF, HintSource.EXTERNAL])
def test_separate_writer_fills_hints_in_one_batch(source: HintSource) -> None:
    policy = CountingPolicy(_writer)
    designs = _designs()
    out = obtain_hints(designs, source, policy, setting="games")
    assert policy.batches == [2]  # one call, only the designs that have code
    assert out[0].ok and out[0].hint == "For AlphaEnv, work backwards from the goal."
    assert out[2].ok and out[2].hint == "For BetaEnv, work backwards from the goal."
    assert out[1] == designs[1] and out[1].failure is ParseFailure.NO_CODE_BLOCK
    assert out[0].source == ENV_A


def test_writer_failures_are_named() -> None:
    policy = ScriptedPolicy(lambda m: "   " if "AlphaEnv" in m[-1]["content"] else "x" * 900)
    out = obtain_hints(_designs(), "self", policy, params=SamplingParams(max_new_tokens=2000))
    assert out[0].failure is ParseFailure.EMPTY_HINT
    assert out[0].reason == "empty hint: from the self hint writer"
    assert out[2].failure is ParseFailure.HINT_TOO_LONG and "900 chars" in out[2].reason
    cut = obtain_hints(_designs(), "self", policy, params=SamplingParams(max_new_tokens=100))
    assert cut[2].failure is ParseFailure.HINT_TOO_LONG and "max_new_tokens" in cut[2].reason


def test_untagged_writer_reply_is_the_hint() -> None:
    out = obtain_hints(_designs(), "external", ScriptedPolicy(lambda m: " Try small cases. "))
    assert out[0].hint == "Try small cases." and out[0].ok


def test_hint_writer_sees_the_code() -> None:
    messages = hint_writer_messages(ENV_B, "tool_use")
    assert messages[0]["role"] == "system" and "<hint>" in messages[0]["content"]
    assert ENV_B.strip() in messages[1]["content"] and "tool-use" in messages[1]["content"]


def test_bad_hint_source_or_missing_policy() -> None:
    with pytest.raises(UserError, match="hint_source"):
        obtain_hints(_designs(), "oracle")
    with pytest.raises(UserError, match="needs a policy"):
        obtain_hints(_designs(), "self")


def test_long_or_cut_writer_reply_keeps_its_first_sentences() -> None:
    chatty = "Bisect the range. Keep the bounds tight. Then guess. " + "More words " * 200
    policy = ScriptedPolicy(lambda m: chatty)
    out = obtain_hints(_designs(), "self", policy, params=SamplingParams(max_new_tokens=2000))
    assert out[2].ok and out[2].hint == "Bisect the range. Keep the bounds tight. Then guess."
    cut = obtain_hints(_designs(), "self", policy, params=SamplingParams(max_new_tokens=30))
    assert cut[2].ok and cut[2].hint == "Bisect the range."
