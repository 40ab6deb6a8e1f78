"""Build a policy from a one-string spec, as written in configs and on the command line."""

from __future__ import annotations

from typing import Any

from spade.errors import UserError
from spade.policy._types import ChatPolicy

SPECS = ("scripted", "smollm2", "hf:PATH", "vllm:PATH", "openai:BASE_URL#MODEL")


def make_policy(spec: str, **kwargs: Any) -> ChatPolicy:
    """``scripted`` | ``hf:PATH`` | ``vllm:PATH`` | ``openai:BASE_URL#MODEL`` | ``smollm2``.

    Keyword arguments go to the backend (e.g. ``respond=`` for scripted, ``device=`` for
    hf, engine options for vllm, ``api_key_env=`` for openai).
    """
    kind, _, rest = spec.partition(":")
    if spec == "scripted":
        from spade.policy._scripted import ScriptedPolicy

        if "respond" not in kwargs:
            raise UserError("policy 'scripted' is built into spade selfplay and cannot be used "
                            "on its own here; give a model spec (smollm2, hf:PATH, ...)")
        return ScriptedPolicy(**kwargs)
    if spec == "smollm2":
        from spade.policy._hf import HFPolicy
        from spade.policy._smollm2 import prepare_smollm2

        cache = kwargs.pop("cache_dir", None)
        kwargs.setdefault("name", "smollm2-135m-instruct")
        return HFPolicy.from_path(prepare_smollm2(cache), **kwargs)
    if kind == "hf" and rest:
        from spade.policy._hf import HFPolicy

        return HFPolicy.from_path(rest, **kwargs)
    if kind == "vllm" and rest:
        from spade.policy._vllm import VLLMPolicy

        return VLLMPolicy.from_path(rest, **kwargs)
    if kind == "openai" and rest:
        from spade.policy._openai import OpenAIPolicy

        base_url, _, model = rest.rpartition("#")
        if not base_url or not model:
            raise UserError(f"openai policy spec needs BASE_URL#MODEL, got {spec!r}")
        return OpenAIPolicy(base_url, model, **kwargs)
    raise UserError(f"unknown policy spec {spec!r}; expected one of: {', '.join(SPECS)}")
