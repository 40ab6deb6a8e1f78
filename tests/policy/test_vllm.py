"""The vllm backend against a fake engine with vLLM's ``LLM.generate`` interface.

vLLM needs a GPU; the fake stands in for the engine only. Rendering and continuation use
the real SmolLM2 tokenizer, as they would with a real engine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from spade.errors import UserError
from spade.policy import Generation, SamplingParams, TokenPolicy, VLLMPolicy
from spade.seeds import derive_seed


@dataclass
class Logprob:  # vllm.sequence.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:  # vllm.outputs.CompletionOutput
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:  # vllm.outputs.RequestOutput
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool = True


@dataclass
class FakeSamplingParams:
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeLLM:
    """Replies with the prompt's last ids reversed, then EOS, within ``max_tokens``.

    Like ``vllm.LLM.generate`` it takes one SamplingParams or a list (one per prompt), and
    a sampled request (temperature > 0) draws one extra token from a generator seeded with
    ITS OWN seed (fresh randomness when unseeded), so seeds matter as they do in vLLM.
    """

    def __init__(self, tokenizer: Any, eos: int) -> None:
        self.tokenizer, self.eos, self.calls = tokenizer, eos, []

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def generate(self, prompts: list[dict], sampling_params: Any, use_tqdm: bool = True) -> list:
        per = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(
            prompts
        )
        assert len(per) == len(prompts), "vLLM requires one SamplingParams per prompt"
        self.calls.append((prompts, per[0].kwargs, [p.kwargs for p in per]))
        out = []
        for n, (prompt, sp) in enumerate(zip(prompts, per, strict=True)):
            ids = prompt["prompt_token_ids"]
            reply = [*ids[-6:-3][::-1], self.eos]
            if sp.kwargs["temperature"] > 0:
                seed = sp.kwargs["seed"]
                rng = random.Random(seed) if seed is not None else random.Random()
                reply.insert(0, rng.randrange(100, 40000))
            limit = sp.kwargs["max_tokens"]
            sampled, reason = (reply, "stop") if len(reply) <= limit else (reply[:limit], "length")
            lps = [{t: Logprob(-0.5 * (k + 1), rank=1)} for k, t in enumerate(sampled)]
            text = self.tokenizer.decode(sampled, skip_special_tokens=True)
            total = sum(next(iter(d.values())).logprob for d in lps)
            completion = CompletionOutput(0, text, sampled, total, lps, reason)
            out.append(RequestOutput(str(n), ids, [completion]))
        return out


@pytest.fixture(scope="module")
def policy(smollm2_path: Path) -> VLLMPolicy:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_path, local_files_only=True)
    engine = FakeLLM(tokenizer, eos=tokenizer.eos_token_id)
    return VLLMPolicy(engine, sampling_params_cls=FakeSamplingParams, context_window=8192)


CONV = [{"role": "user", "content": "Say something."}]


def test_generate_maps_request_outputs(policy: VLLMPolicy) -> None:
    assert isinstance(policy, TokenPolicy)
    prompts = [policy.render(CONV), policy.render([{"role": "user", "content": "Other."}])]
    gens = policy.generate(prompts, SamplingParams(temperature=0.0, max_new_tokens=8))
    for prompt, gen in zip(prompts, gens, strict=True):
        assert list(gen.token_ids) == [*prompt[-6:-3][::-1], policy.tokenizer.eos_token_id]
        assert gen.logprobs == (-0.5, -1.0, -1.5, -2.0)
        assert gen.finish_reason == "stop"
    cut = policy.generate(prompts[:1], SamplingParams(temperature=0.0, max_new_tokens=2))[0]
    assert (len(cut.token_ids), cut.finish_reason) == (2, "length")
    assert policy.generate([], SamplingParams()) == []


def test_sampling_params_translation(policy: VLLMPolicy) -> None:
    engine = policy.engine
    params = SamplingParams(
        temperature=0.6, top_p=0.95, top_k=0, max_new_tokens=5, stop=("</a>",), seed=3
    )
    policy.generate([policy.render(CONV)], params)
    prompts, kwargs, _ = engine.calls[-1]
    assert prompts == [{"prompt_token_ids": policy.render(CONV)}]
    assert kwargs == {
        "n": 1,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": -1,
        "max_tokens": 5,
        "stop": ["</a>"],
        "seed": derive_seed(3, "row", 0),
        "logprobs": 0,
        "skip_special_tokens": True,
        "include_stop_str_in_output": False,
    }
    policy.generate([policy.render(CONV)], SamplingParams(top_k=20))
    assert engine.calls[-1][1]["top_k"] == 20 and engine.calls[-1][1]["stop"] is None


def test_render_and_continuation_follow_the_template(policy: VLLMPolicy) -> None:
    reply = "Hi."
    ids = policy.tokenizer.encode(reply, add_special_tokens=False)
    more = [{"role": "user", "content": "Again."}]
    previous = Generation(reply, tuple(ids))  # cut for length: no end-of-turn sampled
    full = policy.render([*CONV, {"role": "assistant", "content": reply}, *more])
    assert policy.render(CONV) + ids + policy.continuation(more, previous) == full
    assert (
        policy.chat([CONV], SamplingParams(seed=2))[0].text
        == policy.generate([policy.render(CONV)], SamplingParams(seed=2))[0].text
    )


def test_one_sampling_params_per_request_each_with_its_seed(policy: VLLMPolicy) -> None:
    prompt = policy.render(CONV)
    params = SamplingParams(temperature=0.8, max_new_tokens=8, seed=21)
    gens = policy.generate([prompt] * 6, params)
    sent = policy.engine.calls[-1][2]
    assert len(sent) == 6 and len({p["seed"] for p in sent}) == 6
    assert len({g.token_ids for g in gens}) == 6  # identical prompts, different samples
    assert policy.generate([prompt] * 6, params) == gens  # the same call twice: same samples
    rows = [SamplingParams(temperature=0.8, max_new_tokens=8, seed=s) for s in (1, 2, 1)]
    again = policy.generate([prompt] * 3, rows)
    assert again[0] == again[2] != again[1]
    assert [p["seed"] for p in policy.engine.calls[-1][2]] == [1, 2, 1]


def test_real_engine_needs_vllm(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    pytest.importorskip("transformers")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(UserError, match="vllm"):
            VLLMPolicy.from_path(str(tmp_path))
    with pytest.raises(UserError, match="does not exist"):
        VLLMPolicy.from_path(str(tmp_path / "missing"))


def test_prefilled_chat_sends_the_prefix_as_prompt_ids(policy: VLLMPolicy) -> None:
    prefix = "```python\nfrom spade.envs import TextEnv\n"
    conv = [*CONV, {"role": "assistant", "content": prefix}]
    gen = policy.chat([conv], SamplingParams(temperature=0.0, max_new_tokens=8))[0]
    prompts, _, _ = policy.engine.calls[-1]
    sent = prompts[0]["prompt_token_ids"]
    assert sent == policy.render(conv)
    assert policy.decode(sent) == policy.decode(policy.render(CONV)) + prefix
    # the completion is only what the engine sampled after the prefilled prompt
    assert list(gen.token_ids) == [*sent[-6:-3][::-1], policy.tokenizer.eos_token_id]
