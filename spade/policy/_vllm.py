"""Generation with the vLLM offline engine (GPU only; vllm is imported lazily).

Rendering and continuation use the engine's Hugging Face tokenizer and its chat template,
exactly as the hf backend does, so trajectories from both backends have the same layout.
Prompts go in as token ids (``{"prompt_token_ids": ...}``, vLLM's ``TokensPrompt`` shape)
and the sampled ids come back untouched. Each request gets its own ``SamplingParams`` (vLLM
takes a list, one per prompt), so each carries its own seed.

Log-probs are the engine's log-prob of each sampled token (``logprobs=0``). What they mean
depends on the engine's ``logprobs_mode``: vLLM's default ``raw_logprobs`` is the log-softmax
of the logits before temperature and truncation; ``from_path`` passes any
``logprobs_mode=...`` through. At T = 1 without top-k/top-p it equals the hf backend's value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spade.errors import UserError
from spade.policy._hf import check_model_dir
from spade.policy._template import ChatTemplate, TemplatedPolicy
from spade.policy._types import BatchParams, Generation, SamplingParams, per_request


class VLLMPolicy(TemplatedPolicy):
    """``TokenPolicy`` over a ``vllm.LLM`` (or any object with the same ``generate``)."""

    def __init__(
        self,
        engine: Any,
        tokenizer: Any | None = None,
        *,
        name: str = "vllm",
        sampling_params_cls: Callable[..., Any] | None = None,
        template_kwargs: dict[str, Any] | None = None,
        context_window: int | None = None,
    ) -> None:
        self.engine = engine
        self.tokenizer = tokenizer if tokenizer is not None else engine.get_tokenizer()
        self.name = name
        self._sampling_params_cls = sampling_params_cls
        self.template = ChatTemplate(self.tokenizer, template_kwargs=template_kwargs)
        self._context_window = context_window

    @classmethod
    def from_path(cls, path: str, *, name: str | None = None, **engine_kwargs: Any) -> VLLMPolicy:
        """Start a ``vllm.LLM`` on a local model directory."""
        p = check_model_dir(path)
        try:
            from vllm import LLM
        except ImportError:
            raise UserError("the vllm backend needs vLLM (GPU): pip install vllm") from None
        engine = LLM(model=str(p), **engine_kwargs)
        return cls(engine, name=name or p.name)

    @property
    def context_window(self) -> int:
        if self._context_window is not None:
            return self._context_window
        config = getattr(getattr(self.engine, "llm_engine", None), "model_config", None)
        window = getattr(config, "max_model_len", None)
        return int(window or self.tokenizer.model_max_length)

    def _sampling_params(self, params: SamplingParams) -> Any:
        make = self._sampling_params_cls or _vllm_sampling_params()
        return make(
            n=1,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else -1,
            max_tokens=params.max_new_tokens,
            stop=list(params.stop) or None,
            seed=params.seed,
            logprobs=0,
            skip_special_tokens=True,
            include_stop_str_in_output=False,
        )

    def generate(
        self, prompts: Sequence[Sequence[int]], params: BatchParams
    ) -> list[Generation]:
        if not prompts:
            return []
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        per_row = [self._sampling_params(p) for p in per_request(params, len(prompts))]
        outputs = self.engine.generate(requests, per_row, use_tqdm=False)
        return [_generation(out.outputs[0]) for out in outputs]


def _vllm_sampling_params() -> Callable[..., Any]:
    from vllm import SamplingParams

    return SamplingParams


def _generation(completion: Any) -> Generation:
    ids = tuple(int(t) for t in completion.token_ids)
    logprobs: tuple[float, ...] | None = None
    if completion.logprobs is not None:
        logprobs = tuple(
            float(step[token].logprob) for token, step in zip(ids, completion.logprobs, strict=True)
        )
    reason = "length" if completion.finish_reason == "length" else "stop"
    return Generation(str(completion.text), ids, logprobs, reason)
