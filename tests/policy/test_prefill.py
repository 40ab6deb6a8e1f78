"""A conversation ending in an assistant message is continued, not answered anew: the real
SmolLM2 template renders the prefix as prompt ids, and the scripted double sees it."""

from __future__ import annotations

from typing import Any

from spade.policy import SamplingParams, ScriptedPolicy
from spade.policy._types import split_prefill

ASK = [{"role": "system", "content": "Write Python."},
       {"role": "user", "content": "A function that adds two numbers."}]
PREFIX = "```python\ndef add(a, b):\n"


def test_split_prefill() -> None:
    assert split_prefill(ASK) == (ASK, "")
    head, prefix = split_prefill([*ASK, {"role": "assistant", "content": PREFIX}])
    assert head == ASK and prefix == PREFIX


def test_hf_render_opens_the_turn_with_the_prefix(smollm2: Any) -> None:
    plain = smollm2.render(ASK)
    ids = smollm2.render([*ASK, {"role": "assistant", "content": PREFIX}])
    text = smollm2.decode(ids)
    assert text == smollm2.decode(plain) + PREFIX  # opened, not closed with <|im_end|>
    assert smollm2.template.eot_id not in ids[len(plain) - 1:]
    assert ids[: len(plain) - 1] == plain[:-1]  # only the boundary token may merge


def test_hf_chat_continues_the_prefix_seeded(smollm2: Any) -> None:
    conv = [*ASK, {"role": "assistant", "content": PREFIX}]
    params = SamplingParams(temperature=0.8, max_new_tokens=12, seed=3)
    first = smollm2.chat([conv], params)[0]
    again = smollm2.chat([conv], params)[0]
    assert first.token_ids == again.token_ids  # the request's seed decides
    fresh = smollm2.chat([ASK], params)[0]
    assert fresh.token_ids != first.token_ids  # the prefix conditions the reply
    prompt = smollm2.render(conv)
    direct = smollm2.generate([prompt], params)[0]
    assert direct.token_ids == first.token_ids  # chat == generate over the prefilled prompt


def test_scripted_sees_the_prefix_and_keeps_it_in_the_prompt() -> None:
    seen: list[list[dict[str, Any]]] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return "    return a + b\n```"

    policy = ScriptedPolicy(respond)
    conv = [*ASK, {"role": "assistant", "content": PREFIX}]
    prompt = policy.render(conv)
    assert policy.decode(prompt).endswith("<|im_start|>assistant\n" + PREFIX)
    gen = policy.generate([prompt], SamplingParams(seed=1))[0]
    assert seen[-1][-1] == {"role": "assistant", "content": PREFIX}
    assert gen.text == "    return a + b\n```"
    plain = policy.generate([policy.render(ASK)], SamplingParams(seed=1))[0]
    assert plain.text == gen.text and seen[-1][-1]["role"] == "user"  # no empty assistant turn


def test_hf_logprobs_of_a_prefilled_reply_are_what_a_trainer_recomputes(smollm2: Any) -> None:
    """The trainer scores prompt ids (prefix included) + completion ids by teacher forcing;
    the sampler's log-probs must be exactly those, conditioned on the prefix."""
    import torch

    conv = [*ASK, {"role": "assistant", "content": PREFIX}]
    prompt = smollm2.render(conv)
    gen = smollm2.generate([prompt], SamplingParams(temperature=0.8, max_new_tokens=10,
                                                    seed=5))[0]
    ids = torch.tensor([prompt + list(gen.token_ids)])
    with torch.inference_mode():
        logp = torch.log_softmax(smollm2.model(ids).logits[0].float() / 0.8, dim=-1)
    ref = [logp[len(prompt) - 1 + k, t].item() for k, t in enumerate(gen.token_ids)]
    assert gen.logprobs is not None
    assert max(abs(a - b) for a, b in zip(ref, gen.logprobs, strict=True)) < 1e-3
