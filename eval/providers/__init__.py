"""Model providers behind ``--model SPEC``: hf, vllm, openai, replay, oracle."""

from __future__ import annotations

from spade.eval.providers._base import (
    ENTRY_POINTS,
    Provider,
    ProviderOptions,
    Request,
    make_provider,
)

__all__ = ["ENTRY_POINTS", "Provider", "ProviderOptions", "Request", "make_provider"]
