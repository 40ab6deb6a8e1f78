from __future__ import annotations

import random

import pytest

from spade.errors import UserError
from spade.policy import Generation, SamplingParams, ScriptedPolicy, TokenPolicy
from spade.policy._scripted import IM_END

CONV = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "ping 3"}]


def echo(messages: list[dict]) -> str:
    return f"{messages[-1]['role']} said: {messages[-1]['content']}"


def test_implements_both_tiers() -> None:
    policy = ScriptedPolicy(echo)
    assert isinstance(policy, TokenPolicy)
    assert policy.chat([CONV], SamplingParams())[0].text == "user said: ping 3"


def test_render_decodes_to_transcript_and_parses_back() -> None:
    policy = ScriptedPolicy(echo)
    ids = policy.render(CONV)
    assert policy.decode(ids) == (
        "<|im_start|>system\nBe terse.<|im_end|>\n"
        "<|im_start|>user\nping 3<|im_end|>\n<|im_start|>assistant\n"
    )
    assert policy.parse(ids) == CONV


def test_encode_reads_a_written_prompt_as_render_writes_it() -> None:
    policy = ScriptedPolicy(echo)
    history = [*CONV, {"role": "assistant", "content": "<think>\nx\n</think>\n\npong"},
               {"role": "user", "content": "<tool_response>\n3\n</tool_response>"}]
    ids = policy.render(history)
    assert policy.encode(policy.decode(ids)) == ids
    assert policy.parse(policy.encode(policy.decode(ids))) == history
    assert policy.encode("a <|im_end|b") == [ord(c) + 3 for c in "a <|im_end|b"]


def test_generation_ends_with_end_of_turn_and_zero_logprobs() -> None:
    policy = ScriptedPolicy(echo)
    gen = policy.generate([policy.render(CONV)], SamplingParams())[0]
    assert gen.finish_reason == "stop"
    assert gen.token_ids[-1] == IM_END
    assert policy.decode(gen.token_ids[:-1]) == gen.text
    assert gen.logprobs == (0.0,) * len(gen.token_ids)


def test_continuation_matches_full_render() -> None:
    policy = ScriptedPolicy(echo)
    prompt = policy.render(CONV)
    gen = policy.generate([prompt], SamplingParams())[0]
    more = [{"role": "tool", "content": "result"}, {"role": "user", "content": "next"}]
    cont = policy.continuation(more, gen)
    full = policy.render([*CONV, {"role": "assistant", "content": gen.text}, *more])
    assert prompt + list(gen.token_ids) + cont == full
    # the whole transcript parses back, so the next reply sees every turn
    assert policy.parse(full)[-1] == {"role": "user", "content": "next"}
    assert policy.generate([full], SamplingParams())[0].text == "user said: next"


def test_length_cut_and_continuation_closes_the_turn() -> None:
    policy = ScriptedPolicy(lambda m: "abcdefghij")
    prompt = policy.render(CONV)
    gen = policy.generate([prompt], SamplingParams(max_new_tokens=4))[0]
    assert (gen.text, gen.finish_reason, len(gen.token_ids)) == ("abcd", "length", 4)
    cont = policy.continuation([{"role": "user", "content": "go on"}], gen)
    assert cont[0] == IM_END
    parsed = policy.parse(prompt + list(gen.token_ids) + cont)
    assert parsed[-2:] == [
        {"role": "assistant", "content": "abcd"},
        {"role": "user", "content": "go on"},
    ]


def test_stop_string_truncates_text_keeps_stop_ids() -> None:
    policy = ScriptedPolicy(lambda m: "think \\boxed{4} then more")
    gen = policy.generate([policy.render(CONV)], SamplingParams(stop=("}", "then")))[0]
    assert gen.finish_reason == "stop"
    assert gen.text == "think \\boxed{4"
    assert policy.decode(gen.token_ids) == "think \\boxed{4}"


def test_context_window_bounds_generation() -> None:
    policy = ScriptedPolicy(lambda m: "x" * 100, context_window=60)
    prompt = policy.render(CONV)
    gen = policy.generate([prompt], SamplingParams(max_new_tokens=500))[0]
    assert gen.finish_reason == "length"
    assert len(prompt) + len(gen.token_ids) == 60


def test_seeded_rng_is_deterministic_and_varies_across_samples() -> None:
    def noisy(messages: list[dict], rng: random.Random) -> str:
        return str(rng.randrange(10**9))

    policy = ScriptedPolicy(noisy)
    prompts = [policy.render(CONV)] * 4
    first = policy.generate(prompts, SamplingParams(seed=7))
    assert first == ScriptedPolicy(noisy).generate(prompts, SamplingParams(seed=7))
    assert len({g.text for g in first}) == 4  # a group of identical prompts still varies
    assert first != policy.generate(prompts, SamplingParams(seed=8))
    # each request's own seed decides, whatever else is in the batch and where
    rows = [SamplingParams(seed=s) for s in (3, 4, 3)]
    mixed = policy.generate(prompts[:3], rows)
    assert mixed[0] == mixed[2] != mixed[1]
    assert policy.generate(prompts[:1], rows[1:2]) == [mixed[1]]
    with pytest.raises(ValueError, match="2 sampling params for 3"):
        policy.generate(prompts[:3], rows[:2])


def test_rules() -> None:
    policy = ScriptedPolicy.from_rules(
        [(r"ping (\d)", "pong"), (r"count", lambda m: str(len(m)))], default="?"
    )
    convs = [CONV, [{"role": "user", "content": "count"}], [{"role": "user", "content": "hm"}]]
    assert [g.text for g in policy.chat(convs, SamplingParams())] == ["pong", "1", "?"]


def test_tools_are_rendered_and_bad_inputs_rejected() -> None:
    policy = ScriptedPolicy(echo)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    assert "lookup" in policy.decode(policy.render(CONV, tools=tools))
    with pytest.raises(UserError):
        ScriptedPolicy("not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ScriptedPolicy(lambda m: 3).chat([CONV], SamplingParams())  # type: ignore[arg-type,return-value]


def test_unclosed_previous_without_ids() -> None:
    policy = ScriptedPolicy(echo)
    cont = policy.continuation([{"role": "user", "content": "x"}], Generation(text=""))
    assert cont[0] == IM_END
