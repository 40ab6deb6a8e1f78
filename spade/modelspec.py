"""Model specs: the one string that names a model, the same in configs and on every command.

``smollm2`` (the bundled SmolLM2-135M-Instruct, prepared offline), ``hf:PATH`` and
``vllm:PATH`` (a local model directory or training run), ``openai:BASE_URL#MODEL`` (an
OpenAI-compatible server). Self-play also takes ``scripted`` (the built-in model-free
designer and agent); evaluation also takes ``replay:FILE.jsonl`` and ``oracle``.
Models are only loaded from local directories: nothing is downloaded from a model hub.
"""

from __future__ import annotations

import re
from pathlib import Path

from spade.errors import UserError

#: Specs every command that loads a model accepts.
MODEL_SPECS = ("smollm2", "hf:PATH", "vllm:PATH", "openai:BASE_URL#MODEL")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def check_spec(spec: str, extra: tuple[str, ...] = (), where: str = "model spec") -> str:
    """``spec`` if it has one of the known forms (``extra`` adds command-specific ones)."""
    kind, sep, rest = spec.partition(":")
    bare = {s for s in (*MODEL_SPECS, *extra) if ":" not in s}
    schemes = {s.partition(":")[0] for s in (*MODEL_SPECS, *extra) if ":" in s}
    if spec in bare or (sep and kind in schemes and rest):
        if kind == "openai" and not (rest.rpartition("#")[0] and rest.rpartition("#")[2]):
            raise UserError(f"{where} {spec!r}: openai needs BASE_URL#MODEL")
        return spec
    known = " | ".join((*extra, *MODEL_SPECS))
    raise UserError(f"unknown {where} {spec!r}; expected one of: {known}")


def missing_model_message(path: Path) -> str:
    """Why ``path`` is not a model: a hub id gets told that only local directories work."""
    text = str(path)
    if not path.is_absolute() and _HUB_ID.fullmatch(text) and not text.startswith("."):
        return (f"model directory {text} does not exist; {text!r} looks like a model hub id, "
                "but only local model directories work (nothing is downloaded): download "
                "the model yourself and pass its directory")
    return f"model directory does not exist: {text} (only local model directories work)"


def check_local(spec: str) -> None:
    """For ``hf:PATH``/``vllm:PATH``: UserError unless PATH exists (a hub id is explained)."""
    scheme, _, rest = spec.partition(":")
    if scheme in ("hf", "vllm") and rest:
        path = Path(rest.partition("@")[0]).expanduser()
        if not path.exists():
            raise UserError(missing_model_message(path))
