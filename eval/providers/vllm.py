"""``vllm:PATH[@selector]``: the vLLM offline engine (GPU) via ``spade.policy``."""

from __future__ import annotations

from typing import Any

from spade.eval.providers._base import ProviderOptions
from spade.eval.providers._checkpoint import (
    display_name,
    resolve_checkpoint,
    trained_method,
)
from spade.eval.providers._policy import PolicyProvider

from spade.errors import UserError
from spade.identity import model_identity


def make(rest: str, options: ProviderOptions, engine: Any = None,
         sampling_params_cls: Any = None) -> PolicyProvider:
    """``engine``/``sampling_params_cls`` let tests substitute vLLM's LLM/SamplingParams."""
    from spade.policy import VLLMPolicy

    if not rest:
        raise UserError("vllm needs a path: --model vllm:MODEL_DIR")
    model_dir = resolve_checkpoint(rest)
    if engine is None:
        kwargs: dict[str, Any] = {"dtype": options.dtype} if options.dtype else {}
        policy = VLLMPolicy.from_path(str(model_dir), **kwargs)
    else:
        policy = VLLMPolicy(engine, name=display_name(rest, model_dir),
                            sampling_params_cls=sampling_params_cls)
    ident = {"spec": f"vllm:{rest}", "name": display_name(rest, model_dir),
             "path": str(model_dir.resolve()), **model_identity(model_dir).as_record(),
             **trained_method(model_dir)}
    # vLLM schedules its own batches; hand it large chunks.
    return PolicyProvider(policy, f"vllm:{rest}", ident, options.batch_size or 1024)
