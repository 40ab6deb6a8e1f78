"""The designer and hint writer a recipe's method plays with, when not the trained policy.

- ``selfplay.policy.frozen_designer: initial`` (resolved as ``model.freeze_designer``): a
  frozen copy of the policy's INITIAL weights (loaded again from the model directory, so a
  resumed run still designs with the step-0 weights).
- ``selfplay.policy.frozen_designer: SPEC``: any other frozen designer, e.g. an external model
  behind an OpenAI-compatible API (``openai:${BASE_URL}#${MODEL}``).
- ``selfplay.policy.hint_writer`` with ``designer.hint_source: external``: who writes hints.

``${VAR}`` in a spec is read from the environment when the run starts (endpoints are
deployment facts, not recipe content); an unset variable is a one-line error.
"""

from __future__ import annotations

import os
import re

from spade.train.recipe import TrainRecipe

from spade.errors import UserError
from spade.policy import ChatPolicy

__all__ = ["expand_spec", "frozen_designer", "hint_writer"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_spec(spec: str, where: str) -> str:
    """``spec`` with ``${VAR}`` read from the environment."""

    def sub(m: re.Match[str]) -> str:
        value = os.environ.get(m.group(1))
        if not value:
            raise UserError(f"{where}: environment variable {m.group(1)} is not set")
        return value

    return _VAR.sub(sub, spec)


def _policy(spec: str, where: str, setting: str) -> ChatPolicy:
    spec = expand_spec(spec, where)
    if spec == "scripted":
        from spade.cycle._setup import _scripted_designer

        return _scripted_designer(setting)
    from spade.policy import make_policy

    return make_policy(spec)


def frozen_designer(recipe: TrainRecipe) -> ChatPolicy | None:
    """The frozen designer of the recipe, or None when the trained policy designs."""
    setting = recipe.selfplay.designer.setting
    if recipe.model.freeze_designer:
        from spade.train._models import check_device, resolve_model_dir

        from spade.policy import HFPolicy

        return HFPolicy.from_path(resolve_model_dir(recipe.model), device=check_device(
            recipe.model), dtype=recipe.model.dtype, name="frozen-initial-designer")
    spec = recipe.selfplay.policy.frozen_designer
    return None if spec is None else _policy(spec, "selfplay.policy.frozen_designer", setting)


def hint_writer(recipe: TrainRecipe) -> ChatPolicy | None:
    """The external hint writer (``designer.hint_source: external``), else None."""
    if recipe.selfplay.designer.hint_source != "external":
        return None
    spec = recipe.selfplay.policy.hint_writer
    if not spec:
        raise UserError("designer.hint_source is 'external' but policy.hint_writer is unset")
    return _policy(spec, "selfplay.policy.hint_writer", recipe.selfplay.designer.setting)
