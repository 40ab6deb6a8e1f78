"""Generation backends behind one contract (see ``_types``).

``scripted`` (a model-free test double), ``hf`` (transformers), ``vllm`` (offline engine,
GPU), ``openai`` (any OpenAI-compatible server, text only), built from a spec string by
``make_policy``. Importing this package never imports torch, transformers, vllm or openai.
"""

from __future__ import annotations

from spade.policy._factory import make_policy
from spade.policy._hf import HFPolicy
from spade.policy._openai import OpenAIPolicy
from spade.policy._scripted import ScriptedPolicy
from spade.policy._smollm2 import prepare_smollm2, smollm2_dir
from spade.policy._types import ChatPolicy, Generation, Message, SamplingParams, TokenPolicy
from spade.policy._vllm import VLLMPolicy

__all__ = [
    "ChatPolicy",
    "Generation",
    "HFPolicy",
    "Message",
    "OpenAIPolicy",
    "SamplingParams",
    "ScriptedPolicy",
    "TokenPolicy",
    "VLLMPolicy",
    "make_policy",
    "prepare_smollm2",
    "smollm2_dir",
]
