"""Which model directory ``hf:``/``vllm:`` mean: a model directory or a training run.

``PATH`` is either a transformers model directory (has ``config.json``) or a training run
directory with checkpoints laid out as::

    RUN_DIR/checkpoints/step-<N>/     one transformers model directory per saved step
    RUN_DIR/checkpoints/best.txt      the name of the best checkpoint (e.g. ``step-300``)

A run directory takes a selector after ``@``: ``latest`` (the default: the highest N whose
directory has a ``config.json``), ``best`` (per ``best.txt``, or a ``checkpoints/best``
model directory or symlink), or ``step-N``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spade.errors import UserError

_STEP = re.compile(r"step-(\d+)")
#: The manifest a training run writes into every checkpoint (what trained it, and how).
MANIFEST = "spade_checkpoint.json"
_KINDS = ("base", "fixed_env", "spade", "ablation")


def _is_model(p: Path) -> bool:
    return (p / "config.json").is_file()


def resolve_checkpoint(spec: str) -> Path:
    """The model directory for ``PATH`` or ``RUN_DIR@selector`` (one-line errors)."""
    path_text, _, selector = spec.partition("@")
    path = Path(path_text).expanduser()
    if not path.exists():
        from spade.modelspec import missing_model_message

        raise UserError(missing_model_message(path))
    if _is_model(path):
        if selector:
            raise UserError(f"{path} is a model directory; '@{selector}' applies to run dirs")
        return path
    ckpts = path / "checkpoints"
    if not ckpts.is_dir():
        raise UserError(
            f"{path} is neither a transformers model directory (no config.json) nor a "
            "training run directory (no checkpoints/)"
        )
    selector = selector or "latest"
    if selector == "latest":
        steps = sorted(
            (int(m.group(1)), d) for d in ckpts.iterdir()
            if (m := _STEP.fullmatch(d.name)) and _is_model(d)
        )
        if not steps:
            raise UserError(f"{ckpts} holds no complete step-N checkpoint")
        return steps[-1][1]
    if selector == "best":
        marker = ckpts / "best.txt"
        if marker.is_file():
            target = ckpts / marker.read_text(encoding="utf-8").strip()
        elif (ckpts / "best").exists():
            target = (ckpts / "best").resolve()
        else:
            raise UserError(f"{path} has no best checkpoint (no checkpoints/best.txt)")
        if not _is_model(target):
            raise UserError(f"best checkpoint {target} is not a model directory")
        return target
    if _STEP.fullmatch(selector):
        target = ckpts / selector
        if not _is_model(target):
            raise UserError(f"no checkpoint {selector} in {ckpts}")
        return target
    raise UserError(f"unknown checkpoint selector '@{selector}' (latest, best or step-N)")


def display_name(spec: str, model_dir: Path) -> str:
    """``model`` for a model directory, ``run/step-N`` for a run's checkpoint."""
    given = Path(spec.partition("@")[0]).expanduser()
    if given.resolve() == model_dir.resolve():
        return given.resolve().name
    return f"{given.resolve().name}/{model_dir.name}"


def trained_method(model_dir: Path) -> dict[str, Any]:
    """``{"method": {"label", "kind"}}`` from a training checkpoint's manifest, else ``{}``.

    The label and kind are the training recipe's (``method:``), so an evaluated checkpoint
    lands in the report row of the method that trained it.
    """
    try:
        manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
        method = manifest["method"]
        label, kind = str(method["label"]), str(method["kind"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {"method": {"label": label, "kind": kind}} if kind in _KINDS and label else {}
