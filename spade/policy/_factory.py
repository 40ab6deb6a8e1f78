"""Build a policy from a one-string spec, as written in configs and on the command line."""

from __future__ import annotations

from typing import Any

from spade.errors import UserError
from spade.modelspec import POLICY_SPECS, parse_spec
from spade.policy._types import ChatPolicy


def make_policy(spec: str, **kwargs: Any) -> ChatPolicy:
    """``scripted`` | ``hf:PATH`` | ``vllm:PATH`` | ``openai:BASE_URL#MODEL`` | ``smollm2``
    (read by :func:`spade.modelspec.parse_spec`).

    Keyword arguments go to the backend (e.g. ``respond=`` for scripted, ``device=`` for
    hf, engine options for vllm, ``api_key_env=`` for openai).
    """
    parsed = parse_spec(spec, POLICY_SPECS, "policy spec")
    if parsed.scheme == "scripted":
        from spade.policy._scripted import ScriptedPolicy

        if "respond" not in kwargs:
            raise UserError("policy 'scripted' is built into spade selfplay and cannot be used "
                            "on its own here; give a model spec (smollm2, hf:PATH, ...)")
        return ScriptedPolicy(**kwargs)
    if parsed.scheme == "smollm2":
        from spade.policy._hf import HFPolicy
        from spade.policy._smollm2 import prepare_smollm2

        cache = kwargs.pop("cache_dir", None)
        kwargs.setdefault("name", "smollm2-135m-instruct")
        return HFPolicy.from_path(prepare_smollm2(cache), **kwargs)
    if parsed.scheme == "hf":
        from spade.policy._hf import HFPolicy

        return HFPolicy.from_path(parsed.argument, **kwargs)
    if parsed.scheme == "vllm":
        from spade.policy._vllm import VLLMPolicy

        return VLLMPolicy.from_path(parsed.argument, **kwargs)
    from spade.policy._openai import OpenAIPolicy

    base_url, model = parsed.openai_target
    return OpenAIPolicy(base_url, model, **kwargs)
