"""Which model a directory holds: sha256 over what shapes its completions, nothing else.

One identity for training and evaluation. A model directory is four parts, each a sha256
over its files (name and bytes, in name order):

- ``weights``: every ``*.safetensors`` and ``*.gguf`` file, and the ``*.bin`` / ``*.pt`` /
  ``*.pth`` files that hold weights by the usual names (``pytorch_model*``, ``model*``,
  ``adapter_model*``, ``consolidated*``). A training checkpoint's optimizer, scheduler,
  RNG state and trainer arguments (``optimizer.pt``, ``scheduler.pt``, ``rng_state*.pth``,
  ``training_args.bin``, which holds the output directory) are left out: they change no
  completion, and with them the same weights in another directory would be another model.
- ``config``: config.json, generation_config.json.
- ``tokenizer``: the tokenizer files.
- ``chat_template``: ``chat_template.jinja``/``.json`` or the template inside
  tokenizer_config.json (hashed as text).

``sha256`` is the hash of the four part hashes. Two directories are the same model when
all four agree, so a checkpoint that moved, a swapped tokenizer or an edited template is
seen, and a copy of the same files anywhere is the same model. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Version of the rules above; results made under an older rule set do not record it.
IDENTITY_VERSION = 2
PARTS = ("weights", "config", "tokenizer", "chat_template")
SCOPE = "+".join(PARTS)
WEIGHT_SUFFIXES = (".safetensors", ".gguf")
#: Files with these suffixes are weights only under these name prefixes.
PICKLED_SUFFIXES = (".bin", ".pt", ".pth")
PICKLED_WEIGHT_PREFIXES = ("pytorch_model", "model", "adapter_model", "consolidated")
CONFIG_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
    "merges.txt", "special_tokens_map.json", "added_tokens.json", "spiece.model",
)
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


@dataclass(frozen=True)
class ModelIdentity:
    """A model directory's identity: the combined sha256 and its four part hashes."""

    sha256: str
    parts: Mapping[str, str]

    def as_record(self) -> dict[str, object]:
        return {"sha256": self.sha256, "sha256_parts": dict(self.parts),
                "sha256_scope": SCOPE, "identity_version": IDENTITY_VERSION}


def is_weight_file(path: Path) -> bool:
    """True for a file that holds model weights (see the module docstring)."""
    name = path.name
    if name.endswith(WEIGHT_SUFFIXES):
        return True
    return name.endswith(PICKLED_SUFFIXES) and name.startswith(PICKLED_WEIGHT_PREFIXES)


def weight_files(model_dir: Path) -> list[Path]:
    return sorted(p for p in model_dir.iterdir() if p.is_file() and is_weight_file(p))


def _hash_files(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        with f.open("rb") as fh:
            while block := fh.read(1 << 22):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def _template_text(model_dir: Path) -> str:
    files = [model_dir / n for n in TEMPLATE_FILES if (model_dir / n).is_file()]
    if files:
        return "\0".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    cfg = model_dir / "tokenizer_config.json"
    try:
        template = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return ""
    return template if isinstance(template, str) else json.dumps(template, sort_keys=True)


def model_parts(model_dir: Path) -> dict[str, str]:
    """``{part: sha256}`` for the four parts of a local model directory."""
    config = [model_dir / n for n in CONFIG_FILES if (model_dir / n).is_file()]
    tokenizer = [model_dir / n for n in TOKENIZER_FILES if (model_dir / n).is_file()]
    return {
        "weights": _hash_files(weight_files(model_dir)),
        "config": _hash_files(config),
        "tokenizer": _hash_files(tokenizer),
        "chat_template": hashlib.sha256(_template_text(model_dir).encode()).hexdigest(),
    }


def combined(parts: Mapping[str, str]) -> str:
    """The one sha256 over the part hashes."""
    blob = json.dumps({k: parts[k] for k in sorted(parts)}, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def model_identity(model_dir: Path) -> ModelIdentity:
    """The identity of the model in ``model_dir`` (reads every weight file once)."""
    parts = model_parts(model_dir)
    return ModelIdentity(combined(parts), parts)
