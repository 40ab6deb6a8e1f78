"""The hf backend against the real SmolLM2-135M-Instruct (prepared once, shared)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from spade.errors import UserError
from spade.policy import Generation, HFPolicy, SamplingParams, TokenPolicy

CONVS = [
    [{"role": "user", "content": "What is 2+3?"}],
    [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Color?"}],
    [{"role": "user", "content": "Write a long story about a dragon and a knight."}],
]


def _teacher_forced(policy: HFPolicy, prompt: list[int], gen: Generation, t: float) -> list[float]:
    import torch

    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.inference_mode():
        logits = policy.model(ids).logits[0].float()
    logp = torch.log_softmax(logits / t, dim=-1)
    return [logp[len(prompt) - 1 + k, tok].item() for k, tok in enumerate(gen.token_ids)]


def test_batch_generate_shapes_eos_logprobs_seed(smollm2: Any) -> None:
    import torch

    assert isinstance(smollm2, TokenPolicy)
    prompts = [smollm2.render(c) for c in CONVS]
    params = SamplingParams(temperature=0.7, top_k=20, max_new_tokens=8, seed=11)
    rng_before = torch.get_rng_state()
    gens = smollm2.generate(prompts, params)
    assert torch.equal(rng_before, torch.get_rng_state())  # no global seeding side effect
    assert len(gens) == 3
    eos = smollm2.template.eos_ids
    for prompt, gen in zip(prompts, gens, strict=True):
        assert 1 <= len(gen.token_ids) <= 8
        assert gen.logprobs is not None and len(gen.logprobs) == len(gen.token_ids)
        assert all(math.isfinite(x) and x <= 0 for x in gen.logprobs)
        ended = gen.token_ids[-1] in eos
        assert gen.finish_reason == ("stop" if ended else "length")
        assert ended or len(gen.token_ids) == 8
        assert not any(t in eos for t in gen.token_ids[:-1])  # trimmed at the first EOS
        assert "<|im_end|>" not in gen.text
        # raw policy log-probs at temperature T, untouched by top-k (what a trainer recomputes)
        ref = _teacher_forced(smollm2, prompt, gen, 0.7)
        assert max(abs(a - b) for a, b in zip(ref, gen.logprobs, strict=True)) < 1e-3
    assert smollm2.generate(prompts, params) == gens
    # the story prompt cannot finish in 8 tokens: it must be cut for length
    assert gens[2].finish_reason == "length"


def test_each_row_samples_from_its_own_seed(smollm2: Any) -> None:
    prompt = smollm2.render(CONVS[2])
    other = smollm2.render(CONVS[0])
    params = SamplingParams(temperature=1.0, max_new_tokens=6, seed=5)
    group = smollm2.generate([prompt] * 4, params)
    assert len({g.token_ids for g in group}) > 1  # identical prompts, one batch: they vary
    assert smollm2.generate([prompt] * 4, params) == group  # the same call twice
    seeds = [SamplingParams(temperature=1.0, max_new_tokens=6, seed=s) for s in (8, 9)]
    alone = smollm2.generate([prompt], seeds[:1])[0]
    # the same request in a different batch (other prompts, other seeds, other position,
    # padding) draws the same sample
    mixed = smollm2.generate([other, prompt, prompt], [seeds[1], seeds[0], seeds[1]])
    assert mixed[1].token_ids == alone.token_ids
    assert mixed[2].token_ids == smollm2.generate([prompt], seeds[1:])[0].token_ids


def test_copies_of_a_prompt_share_one_prompt_pass(smollm2: Any) -> None:
    prompt, other = smollm2.render(CONVS[2]), smollm2.render(CONVS[0])
    seeds = [SamplingParams(temperature=1.0, max_new_tokens=5, seed=s) for s in (1, 2, 3)]
    shapes: list[tuple[int, ...]] = []
    hook = smollm2.model.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        gens = smollm2.generate([prompt, other, prompt, prompt], [seeds[0], *seeds])
    finally:
        hook.remove()
    opening = shapes[0][1]  # the chat template's default system prompt, encoded once
    assert shapes[0] == (1, opening) and prompt[:opening] == other[:opening]
    assert shapes[1] == (2, len(prompt) - opening)  # two distinct prompts: one row each
    assert all(s[1] == 1 for s in shapes[2:])  # then one token per step
    for gen, params, p in zip(gens, [seeds[0], *seeds], [prompt, other, prompt, prompt],
                              strict=True):
        alone = smollm2.generate([p], [params])[0]  # as if sampled on its own
        assert gen.token_ids == alone.token_ids
        assert gen.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


def test_render_uses_the_model_chat_template(smollm2: Any) -> None:
    text = smollm2.decode(smollm2.render(CONVS[1]))
    assert text == (
        "<|im_start|>system\nAnswer in one word.<|im_end|>\n"
        "<|im_start|>user\nColor?<|im_end|>\n<|im_start|>assistant\n"
    )
    direct = smollm2.tokenizer.apply_chat_template(
        CONVS[1], tokenize=True, add_generation_prompt=True, return_dict=False
    )
    assert smollm2.render(CONVS[1]) == list(direct)


def test_encode_reads_a_written_prompt_as_the_template_renders_it(smollm2: Any) -> None:
    history = [*CONVS[1], {"role": "assistant", "content": "Blue."},
               {"role": "user", "content": "<tool_response>\nok\n</tool_response>"}]
    ids = smollm2.render(history)
    assert smollm2.encode(smollm2.decode(ids)) == ids
    assert smollm2.encode("<|im_start|>")[-1:] == [smollm2.tokenizer.convert_tokens_to_ids(
        "<|im_start|>")]


@pytest.mark.parametrize("closed", [True, False])
def test_continuation_equals_full_render_suffix(smollm2: Any, closed: bool) -> None:
    tok = smollm2.tokenizer
    reply = "Five."
    ids = tok.encode(reply, add_special_tokens=False)
    previous = Generation(reply, tuple([*ids, smollm2.template.eot_id] if closed else ids))
    more = [{"role": "user", "content": "And 3+4?"}]
    cont = smollm2.continuation(more, previous)
    full = smollm2.render([*CONVS[0], {"role": "assistant", "content": reply}, *more])
    prompt = smollm2.render(CONVS[0])
    closing = [] if closed else [smollm2.template.eot_id]
    assert prompt + list(previous.token_ids) + closing + cont[len(closing) :] == full
    assert prompt + list(previous.token_ids) + cont == full


def test_missing_or_wrong_model_dir(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        HFPolicy.from_path(tmp_path / "nope")
    (tmp_path / "weights.bin").write_text("x")
    with pytest.raises(UserError, match=r"no config\.json"):
        HFPolicy.from_path(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match="cannot load model"):
        HFPolicy.from_path(tmp_path)


def test_empty_and_overlong_prompts(smollm2: Any) -> None:
    assert smollm2.generate([], SamplingParams()) == []
    too_long = [1] * smollm2.context_window
    gen = smollm2.generate([too_long], SamplingParams(max_new_tokens=4))[0]
    # reported as such, not passed off as an empty completion cut for length
    assert gen == Generation("", (), (), "prompt_too_long")
    assert smollm2.generate([[1]], SamplingParams(max_new_tokens=0))[0].finish_reason == "length"


@pytest.mark.slow
def test_stop_strings_and_greedy_batch_matches_single(smollm2: Any) -> None:
    prompts = [smollm2.render(c) for c in CONVS]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    batch = smollm2.generate(prompts, greedy)
    single = [smollm2.generate([p], greedy)[0] for p in prompts]
    assert [g.token_ids for g in batch] == [g.token_ids for g in single]
    first = batch[0].text
    assert len(first) > 3
    stop = first[2:4]
    cut = smollm2.generate(prompts[:1], SamplingParams(0.0, max_new_tokens=24, stop=(stop,)))[0]
    assert cut.finish_reason == "stop"
    assert cut.text == first[: first.index(stop)]
    assert stop in smollm2.decode(cut.token_ids)
    assert stop not in smollm2.decode(cut.token_ids[:-1])


@pytest.mark.slow
def test_chat_decodes_generation(smollm2: Any) -> None:
    gens = smollm2.chat(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=16))
    assert "5" in gens[0].text


def test_prompts_that_open_alike_encode_the_opening_once(smollm2: Any) -> None:
    """Distinct prompts with a common opening (a system prompt) encode it once, then each
    row's own tokens; every row's greedy reply and log-probs are those it gets alone."""
    from spade.policy._openings import MIN_SHARED

    system = {"role": "system", "content": "You play a short word game. Reply with one word."}
    convs = [[system, {"role": "user", "content": q}]
             for q in ("Name a fruit.", "Name a colour that is also a fruit.", "Say hi")]
    prompts = [smollm2.render(c) for c in convs]
    params = SamplingParams(temperature=0.0, max_new_tokens=6, seed=3)
    alone = [smollm2.generate([p], params)[0] for p in prompts]
    shapes: list[tuple[int, ...]] = []
    hook = smollm2.model.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        together = smollm2.generate(prompts, params)
    finally:
        hook.remove()
    opening = shapes[0][1]
    assert shapes[0][0] == 1 and opening >= MIN_SHARED  # the opening, once
    assert all(p[:opening] == prompts[0][:opening] for p in prompts)
    assert shapes[1] == (3, max(len(p) for p in prompts) - opening)  # then each row's own
    for a, b in zip(alone, together, strict=True):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs or [], b.logprobs or [],
                                               strict=True)) < 1e-3
