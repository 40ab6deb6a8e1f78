"""A real small model (SmolLM2-135M-Instruct) through the runner: the token bookkeeping must
hold with a real tokenizer and chat template, not just the scripted one."""

from __future__ import annotations

import math

import pytest

from spade.episodes import EpisodeConfig, StopReason, play_matched
from spade.policy import Generation, SamplingParams

pytestmark = [pytest.mark.slow, pytest.mark.bwrap]


@pytest.fixture(scope="module")
def hf_policy():
    pytest.importorskip("transformers")
    from spade.policy import HFPolicy, smollm2_dir

    path = smollm2_dir()
    if not (path / "config.json").is_file():
        pytest.skip(f"SmolLM2 not prepared at {path} (run prepare_smollm2 once)")
    return HFPolicy.from_path(path, device="cpu")


def test_smollm2_plays_matched_arms_with_exact_token_bookkeeping(hf_policy, examples) -> None:
    params = SamplingParams(temperature=1.0, max_new_tokens=16, seed=0)
    calls: list[int] = []
    generate = hf_policy.generate

    def counting(prompts, p):
        calls.append(len(prompts))
        return generate(prompts, p)

    hf_policy.generate = counting
    try:
        hinted, unhinted = play_matched(
            hf_policy, examples, "number_guess", "Guess the middle of the range.", [0],
            params, EpisodeConfig(max_turns=2),
        )
    finally:
        del hf_policy.generate
    trajectories = hinted + unhinted
    assert calls[0] == 2 and len(calls) == max(t.num_turns for t in trajectories)
    for t in trajectories:
        assert t.stop_reason in set(StopReason) - {StopReason.ENV_ERROR, StopReason.TIMEOUT}
        ids = list(t.token_ids)
        assert ids[: t.prompt_len] == hf_policy.render(list(t.messages[:2]))
        assert len(ids) == len(t.loss_mask) == len(t.logprobs)
        for turn, nxt in zip(t.turns, t.turns[1:], strict=False):
            previous = Generation(turn.reply, tuple(ids[turn.start : turn.end]))
            feedback = [{"role": "user", "content": text} for text in turn.feedback]
            assert ids[turn.end : nxt.start] == hf_policy.continuation(feedback, previous)
        sampled = [i for i, m in zip(ids, t.loss_mask, strict=True) if m]
        assert sampled == [i for turn in t.turns for i in ids[turn.start : turn.end]]
        for turn in t.turns:
            text = hf_policy.tokenizer.decode(ids[turn.start : turn.end], skip_special_tokens=True)
            assert text == turn.reply
        lps = [lp for lp, m in zip(t.logprobs, t.loss_mask, strict=True) if m]
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in lps) and any(lp < 0 for lp in lps)
