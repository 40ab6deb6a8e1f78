"""Game episodes over real example environments in the real sandbox."""

from __future__ import annotations

import pytest
from _episode_agents import (
    HINT_MARK,
    CountingPolicy,
    bisect_agent,
    first_user,
    hint_sensitive_agent,
)

from spade.episodes import (
    EpisodeConfig,
    EpisodeJob,
    StopReason,
    Trajectory,
    matched_jobs,
    play_matched,
    run_episodes,
)
from spade.errors import UserError
from spade.policy import Generation, SamplingParams
from spade.rewards import Arm

pytestmark = pytest.mark.bwrap
PARAMS = SamplingParams(max_new_tokens=64)


def _assert_consistent(t: Trajectory) -> None:
    assert len(t.token_ids) == len(t.loss_mask) == len(t.logprobs or t.token_ids)
    assert len(t.rewards) == t.num_turns and len(t.turns) == t.num_turns
    assert sum(t.loss_mask[: t.prompt_len]) == 0


def test_bisect_wins_both_arms_on_matched_seeds(examples) -> None:
    policy = CountingPolicy(bisect_agent)
    hinted, unhinted = play_matched(
        policy, examples, "number_guess", "Halve the range.", [0, 1, 2], PARAMS
    )
    assert [t.seed for t in hinted] == [t.seed for t in unhinted] == [0, 1, 2]
    assert {t.arm for t in hinted} == {Arm.HINTED} and {t.arm for t in unhinted} == {Arm.UNHINTED}
    for h, u in zip(hinted, unhinted, strict=True):
        _assert_consistent(h)
        assert h.stop_reason is StopReason.WON and h.won and h.total_return == 1.0
        assert u.stop_reason is StopReason.WON and 1 <= u.num_turns <= 10
        assert h.rewards[-1] == 1.0 and sum(h.rewards[:-1]) == 0.0
        # same seed, same instance: the first observation differs only by the hint block
        obs_u = first_user(list(u.messages))
        obs_h = first_user(list(h.messages))
        assert obs_h.startswith(obs_u) and "--- Hint ---\nHint: Halve the range." in obs_h
        assert HINT_MARK not in obs_u and h.hint == "Halve the range." and u.hint is None
        assert [x.action for x in h.turns] == [x.action for x in u.turns]
    assert len({first_user(list(t.messages)) for t in unhinted}) == 3  # seeds differ


def test_hint_only_in_first_user_message(examples) -> None:
    hinted, _ = play_matched(CountingPolicy(bisect_agent), examples, "number_guess", "Go mid.",
                             [5], PARAMS)
    users = [m["content"] for m in hinted[0].messages if m["role"] == "user"]
    assert HINT_MARK in users[0] and not any(HINT_MARK in u for u in users[1:])
    assert hinted[0].messages[0]["role"] == "system"
    assert "\\boxed{}" in hinted[0].messages[0]["content"]


def test_hint_makes_a_difference_with_a_hint_sensitive_agent(examples) -> None:
    seeds = list(range(4))
    hinted, unhinted = play_matched(
        CountingPolicy(hint_sensitive_agent), examples, "number_guess", "Bisect.", seeds, PARAMS
    )
    assert all(t.won for t in hinted)
    assert sum(t.won for t in unhinted) < len(seeds)  # random guessing rarely finds 1 of 1023
    assert all(t.stop_reason in (StopReason.TERMINATED, StopReason.WON) for t in unhinted)


def test_mask_selects_exactly_the_agent_replies(examples) -> None:
    policy = CountingPolicy(bisect_agent)
    (t,) = run_episodes(policy, [EpisodeJob("number_guess", 7, None)], examples, PARAMS)
    sampled = policy.decode([i for i, m in zip(t.token_ids, t.loss_mask, strict=True) if m])
    # the scripted tokenizer ends every sampled reply with its end-of-turn token
    assert sampled == "".join(turn.reply + "<|im_end|>" for turn in t.turns)
    for turn in t.turns:
        assert all(t.loss_mask[turn.start : turn.end])
        assert policy.decode(t.token_ids[turn.start : turn.end]) == turn.reply + "<|im_end|>"
    unmasked = policy.decode([i for i, m in zip(t.token_ids, t.loss_mask, strict=True) if not m])
    assert "My number is" in unmasked and "My guess" not in unmasked
    assert t.logprobs is not None and all(lp == 0.0 for lp in t.logprobs)


def test_token_ids_are_the_concatenation_of_per_turn_pieces(examples) -> None:
    policy = CountingPolicy(bisect_agent)
    (t,) = run_episodes(policy, [EpisodeJob("number_guess", 3, "Bisect.")], examples, PARAMS)
    assert t.num_turns >= 3
    ids = list(t.token_ids)
    assert ids[: t.prompt_len] == policy.render(list(t.messages[:2]))
    for turn, nxt in zip(t.turns, t.turns[1:], strict=False):
        previous = Generation(turn.reply, tuple(ids[turn.start : turn.end]))
        feedback = [{"role": "user", "content": text} for text in turn.feedback]
        assert ids[turn.end : nxt.start] == policy.continuation(feedback, previous)
    assert t.turns[-1].end == len(ids)
    # every prompt the policy saw extends the previous prompt plus the sampled reply
    prompts = [call[0] for call in policy.calls]
    for k in range(1, len(prompts)):
        turn = t.turns[k - 1]
        assert prompts[k][: turn.end] == prompts[k - 1] + ids[turn.start : turn.end]


def test_one_generate_call_per_turn_step_across_envs_and_arms(examples) -> None:
    policy = CountingPolicy(hint_sensitive_agent)
    jobs = matched_jobs("number_guess", "Bisect.", [0, 1, 2]) + matched_jobs(
        "divisor_sum", "Inclusion-exclusion.", [0, 1]
    )
    trajectories = run_episodes(policy, jobs, examples, PARAMS)
    assert [(t.env_id, t.seed, t.arm) for t in trajectories] == [
        (j.env_id, j.seed, j.arm) for j in jobs
    ]
    sizes = [len(call) for call in policy.calls]
    assert sizes[0] == len(jobs) == 10
    assert len(sizes) == max(t.num_turns for t in trajectories)
    assert sum(sizes) == sum(t.num_turns for t in trajectories)
    assert sizes == sorted(sizes, reverse=True)
    divisor = [t for t in trajectories if t.env_id == "divisor_sum"]
    assert all(t.num_turns == 1 and t.stop_reason is StopReason.TERMINATED for t in divisor)


def test_max_active_bounds_the_batch_and_keeps_order(examples) -> None:
    policy = CountingPolicy(bisect_agent)
    jobs = [EpisodeJob("number_guess", s) for s in range(5)]
    out = run_episodes(policy, jobs, examples, PARAMS, EpisodeConfig(max_active=2))
    assert [t.seed for t in out] == list(range(5)) and all(t.won for t in out)
    assert max(len(c) for c in policy.calls) == 2
    assert sum(len(c) for c in policy.calls) == sum(t.num_turns for t in out)


def test_runner_cap_gives_max_turns(examples) -> None:
    policy = CountingPolicy(lambda m: "\\boxed{-5}")
    (t,) = run_episodes(policy, [EpisodeJob("number_guess", 0)], examples, PARAMS,
                        EpisodeConfig(max_turns=3))
    assert t.stop_reason is StopReason.MAX_TURNS and t.num_turns == 3 and t.max_turns == 3
    assert t.total_return == 0.0 and not t.won and t.env_fault is None
    assert [turn.action for turn in t.turns] == ["-5"] * 3


def test_env_turn_limit_caps_the_runner_default(examples) -> None:
    (t,) = run_episodes(CountingPolicy(lambda m: "no box here"),
                        [EpisodeJob("number_guess", 0)], examples, PARAMS)
    # number_guess allows 10 guesses and ends the episode itself on the last one
    assert t.max_turns == 10 and t.num_turns == 10
    assert t.stop_reason is StopReason.TERMINATED and t.turns[0].action == "no box here"


def test_context_exhausted(examples) -> None:
    policy = CountingPolicy(bisect_agent, context_window=10_000)
    (full,) = run_episodes(policy, [EpisodeJob("number_guess", 1)], examples, PARAMS)
    assert full.num_turns >= 3
    window = full.turns[1].end + PARAMS.max_new_tokens  # room for two turns only
    small = CountingPolicy(bisect_agent, context_window=window)
    (t,) = run_episodes(small, [EpisodeJob("number_guess", 1)], examples, PARAMS)
    assert t.stop_reason is StopReason.CONTEXT_EXHAUSTED and t.num_turns == 2
    assert len(t.token_ids) + PARAMS.max_new_tokens <= window
    assert len(small.calls) == 2
    tiny = CountingPolicy(bisect_agent, context_window=50)
    (none,) = run_episodes(tiny, [EpisodeJob("number_guess", 1)], examples, PARAMS)
    assert none.stop_reason is StopReason.CONTEXT_EXHAUSTED and none.num_turns == 0
    assert tiny.calls == []


def test_a_reply_cut_at_max_new_tokens_is_closed_by_masked_tokens(examples) -> None:
    policy = CountingPolicy(lambda m: "\\boxed{1}" + " padding" * 20)
    params = SamplingParams(max_new_tokens=12)
    (t,) = run_episodes(policy, [EpisodeJob("number_guess", 0)], examples, params,
                        EpisodeConfig(max_turns=2))
    assert t.turns[0].finish_reason == "length" and t.turns[0].end - t.turns[0].start == 12
    sampled = policy.decode([i for i, m in zip(t.token_ids, t.loss_mask, strict=True) if m])
    assert sampled == "".join(turn.reply for turn in t.turns)
    assert t.token_ids[t.turns[0].end] == 2  # the end-of-turn the runner added, masked
    assert t.loss_mask[t.turns[0].end] == 0


def test_matched_play_needs_a_hint_and_seeds(examples) -> None:
    with pytest.raises(UserError):
        play_matched(CountingPolicy(bisect_agent), examples, "number_guess", "  ", [0], PARAMS)
    with pytest.raises(UserError):
        play_matched(CountingPolicy(bisect_agent), examples, "number_guess", "h", [], PARAMS)


def test_env_threads_do_not_change_results(examples) -> None:
    jobs = matched_jobs("number_guess", "Bisect.", [0, 1, 2]) + matched_jobs(
        "code_breaker", "Repeat digits.", [0, 1]
    )

    def run(threads: int) -> list[tuple]:
        out = run_episodes(CountingPolicy(hint_sensitive_agent), jobs, examples, PARAMS,
                           EpisodeConfig(env_threads=threads))
        assert not any(t.env_fault for t in out)
        return [(t.seed, t.arm, t.stop_reason, t.token_ids, t.rewards) for t in out]

    assert run(1) == run(4)
