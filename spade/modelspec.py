"""Model specs: the one string that names a model, the same in configs and on every command.

``smollm2`` (the bundled SmolLM2-135M-Instruct, prepared offline), ``hf:PATH`` and
``vllm:PATH`` (a local model directory, or a training run ``RUN[@latest|@best|@step-N]``),
``openai:BASE_URL#MODEL`` (an OpenAI-compatible server). Self-play also takes ``scripted``
(the built-in model-free designer and agent); evaluation also takes ``replay:FILE.jsonl``
and ``oracle``. Models are only loaded from local directories: nothing is downloaded from a
model hub.

Every spec is read by :func:`parse_spec`, whoever builds the model from it (self-play's
policies, training's frozen designer, evaluation's providers, the agent loop's simulated
user), so a new scheme is one entry in :data:`SCHEMES` plus the code that builds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from spade.errors import UserError

#: Every scheme, as its form reads in messages (``NAME`` alone takes no argument).
SCHEMES: Mapping[str, str] = MappingProxyType({
    "smollm2": "smollm2",
    "hf": "hf:PATH",
    "vllm": "vllm:PATH",
    "openai": "openai:BASE_URL#MODEL",
    "scripted": "scripted",
    "replay": "replay:FILE.jsonl",
    "oracle": "oracle",
})
#: Schemes whose argument is a local model directory or a training run (``RUN@selector``).
LOCAL_SCHEMES = ("hf", "vllm")
#: Specs every command that loads a model accepts.
MODEL_SPECS = tuple(SCHEMES[s] for s in ("smollm2", "hf", "vllm", "openai"))
#: Self-play's roles (and training's frozen designer and hint writer) also take ``scripted``.
POLICY_SPECS = (SCHEMES["scripted"], *MODEL_SPECS)
#: Evaluation also takes recorded completions and the suites' own references.
EVAL_SPECS = (*MODEL_SPECS, SCHEMES["replay"], SCHEMES["oracle"])
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: ``scheme`` and the ``argument`` after ``scheme:`` ("" for a bare one)."""

    text: str
    scheme: str
    argument: str

    @property
    def local_path(self) -> Path | None:
        """The directory an ``hf:``/``vllm:`` spec names (without its ``@selector``)."""
        if self.scheme not in LOCAL_SCHEMES:
            return None
        return Path(self.argument.partition("@")[0]).expanduser()

    @property
    def openai_target(self) -> tuple[str, str]:
        """``(BASE_URL, MODEL)`` of an ``openai:`` spec."""
        base_url, _, model = self.argument.rpartition("#")
        return base_url, model


def parse_spec(text: str, accepted: tuple[str, ...] = MODEL_SPECS,
               where: str = "model spec") -> ModelSpec:
    """``text`` parsed, if it has one of the ``accepted`` forms (one-line UserError if not)."""
    scheme, sep, argument = text.partition(":")
    bare = {s for s in accepted if ":" not in s}
    schemes = {s.partition(":")[0] for s in accepted if ":" in s}
    if text in bare:
        return ModelSpec(text, text, "")
    if sep and scheme in schemes and argument:
        spec = ModelSpec(text, scheme, argument)
        if scheme == "openai" and not all(spec.openai_target):
            raise UserError(f"{where} {text!r}: openai needs BASE_URL#MODEL")
        return spec
    raise UserError(f"unknown {where} {text!r}; expected one of: {' | '.join(accepted)}")


def check_spec(spec: str, extra: tuple[str, ...] = (), where: str = "model spec") -> str:
    """``spec`` if it has one of the known forms (``extra`` adds command-specific ones)."""
    return parse_spec(spec, (*extra, *MODEL_SPECS), where).text


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
    if scheme in LOCAL_SCHEMES and rest:
        path = ModelSpec(spec, scheme, rest).local_path
        if path is not None and not path.exists():
            raise UserError(missing_model_message(path))
