"""Tool-use episodes over the real tool examples in the real sandbox."""

from __future__ import annotations

import json

import pytest
from _episode_agents import CountingPolicy, refund_agent

from spade.episodes import EpisodeJob, StopReason, run_episodes
from spade.policy import SamplingParams

pytestmark = pytest.mark.bwrap
PARAMS = SamplingParams(max_new_tokens=256)


def test_refund_agent_wins_through_tools(examples) -> None:
    policy = CountingPolicy(refund_agent)
    jobs = [EpisodeJob("refund_desk", s, "Check the policy.") for s in range(4)]
    out = run_episodes(policy, jobs, examples, PARAMS)
    for t in out:
        assert t.kind == "tool" and t.stop_reason is StopReason.WON, t.turns
        assert t.num_turns == 4 and t.rewards == (0.0, 0.0, 0.0, 1.0) and t.total_return == 1.0
        names = [c["name"] for turn in t.turns[:3] for c in turn.tool_calls]
        assert names[:2] == ["find_orders", "get_order"]
        assert names[2] in ("issue_refund", "deny_refund") and len(names) == 3
        assert t.turns[-1].action == "Your request has been handled."
        roles = [m["role"] for m in t.messages]
        assert roles[:3] == ["system", "user", "assistant"] and roles.count("tool") == 3
        # tool results and the user turns are masked; only the replies are trained on
        pairs = list(zip(t.token_ids, t.loss_mask, strict=True))
        sampled = policy.decode([i for i, m in pairs if m])
        assert sampled == "".join(turn.reply + "<|im_end|>" for turn in t.turns)
        unmasked = policy.decode([i for i, m in pairs if not m])
        assert "<|im_start|>tool\n" in unmasked and '"order_id"' in unmasked
    assert len(policy.calls) == 4 and all(len(c) == 4 for c in policy.calls)


def test_tools_are_listed_in_the_system_prompt_without_template_support(examples) -> None:
    (t,) = run_episodes(CountingPolicy(refund_agent), [EpisodeJob("refund_desk", 0)],
                        examples, PARAMS)
    system = t.messages[0]["content"]
    assert "<tool_call>" in system and "<answer>" in system
    assert '"name": "find_orders"' in system and '"name": "deny_refund"' in system


class ToolTemplatePolicy(CountingPolicy):
    """A policy whose chat template renders tool schemas itself (``tools=``)."""

    supports_tools = True


def test_tools_go_through_the_chat_template_when_supported(examples) -> None:
    policy = ToolTemplatePolicy(refund_agent)
    (t,) = run_episodes(policy, [EpisodeJob("refund_desk", 0)], examples, PARAMS)
    system = t.messages[0]["content"]
    assert '"name": "find_orders"' not in system
    assert policy.decode(t.token_ids[: t.prompt_len]).startswith("<|im_start|>system\n# Tools")
    assert t.stop_reason is StopReason.WON


def _clumsy(messages) -> str:
    turn = sum(m["role"] == "assistant" for m in messages)
    return [
        '<tool_call>{"name": "get_policy", "arguments": </tool_call>',
        "Let me think about what to do.",
        '<tool_call>{"name": "teleport", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "get_policy", "arguments": {}}</tool_call> <answer>no idea</answer>',
    ][turn]


def test_parse_errors_nudges_and_answer_with_calls(examples) -> None:
    (t,) = run_episodes(CountingPolicy(_clumsy), [EpisodeJob("refund_desk", 0)], examples, PARAMS)
    assert t.num_turns == 4 and t.stop_reason is StopReason.TERMINATED and t.total_return == 0.0
    bad, silent, unknown, final = t.turns
    assert bad.tool_calls == () and "could not be parsed: invalid JSON" in bad.feedback[0]
    assert silent.tool_calls == ()
    assert "neither a tool call nor a final answer" in silent.feedback[0]
    assert "unknown tool 'teleport'" in unknown.feedback[0]
    assert final.tool_calls == ({"name": "get_policy", "arguments": {}},)
    assert "Refund policy" in final.feedback[0] and final.action == "no idea"
    roles = [m["role"] for m in t.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant",
                     "tool", "assistant", "tool", "user"]


def test_tool_episode_hits_the_env_turn_cap(examples) -> None:
    call = json.dumps({"name": "get_policy", "arguments": {}})
    (t,) = run_episodes(CountingPolicy(lambda m: f"<tool_call>{call}</tool_call>"),
                        [EpisodeJob("refund_desk", 1)], examples, PARAMS)
    assert t.stop_reason is StopReason.MAX_TURNS and t.num_turns == t.max_turns == 10
    assert t.total_return == 0.0 and t.env_fault is None


def test_trajectory_json_round_trips_through_json(examples) -> None:
    (t,) = run_episodes(CountingPolicy(refund_agent), [EpisodeJob("refund_desk", 2, "h")],
                        examples, PARAMS)
    data = json.loads(json.dumps(t.to_json()))
    assert data["stop_reason"] == "won" and data["arm"] == "hinted" and data["num_turns"] == 4
    assert data["token_ids"] == list(t.token_ids) and len(data["turns"]) == 4
    assert data["turns"][0]["tool_calls"][0]["name"] == "find_orders"
    assert data["messages"][0]["role"] == "system"
    assert "token_ids" not in t.to_json(tokens=False)
