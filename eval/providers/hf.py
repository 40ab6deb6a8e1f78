"""``hf:PATH[@selector]``: a local transformers model (CPU or GPU) via ``spade.policy``."""

from __future__ import annotations

from spade.eval.providers._base import ProviderOptions
from spade.eval.providers._checkpoint import (
    display_name,
    resolve_checkpoint,
    trained_method,
)
from spade.eval.providers._policy import PolicyProvider

from spade.identity import model_identity


def make(rest: str, options: ProviderOptions) -> PolicyProvider:
    from spade.policy import HFPolicy

    if not rest:
        from spade.errors import UserError

        raise UserError("hf needs a path: --model hf:MODEL_DIR or hf:RUN_DIR@latest")
    model_dir = resolve_checkpoint(rest)
    batch = options.batch_size or 16
    policy = HFPolicy.from_path(
        model_dir, device=options.device, dtype=options.dtype or "auto", max_batch_size=batch
    )
    ident = {"spec": f"hf:{rest}", "name": display_name(rest, model_dir),
             "path": str(model_dir.resolve()), **model_identity(model_dir).as_record(),
             **trained_method(model_dir)}
    return PolicyProvider(policy, f"hf:{rest}", ident, batch)
