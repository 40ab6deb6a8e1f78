"""Which model produced a result: the sha256 of everything that shapes its completions.

A local model directory is identified by four parts, each a sha256 over its files (name
and bytes, in name order): ``weights`` (every ``*.safetensors`` / ``*.bin`` / ``*.gguf``,
in full), ``config`` (config.json, generation_config.json), ``tokenizer`` (the tokenizer
files) and ``chat_template`` (``chat_template.jinja``/``.json`` or the template inside
tokenizer_config.json). ``sha256`` is the hash of the four. Two runs compare as the same
model only when all four agree, so a checkpoint that moved under ``RUN@latest``, a swapped
tokenizer or an edited chat template is seen. A replay file is identified by its own
sha256; a remote server by its URL and model name only (it has no bytes to hash).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.gguf", "*.pt", "*.pth")
CONFIG_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
    "merges.txt", "special_tokens_map.json", "added_tokens.json", "spiece.model",
)
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
PARTS = ("weights", "config", "tokenizer", "chat_template")


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
    weights = sorted({w for pat in WEIGHT_PATTERNS for w in model_dir.glob(pat) if w.is_file()})
    config = [model_dir / n for n in CONFIG_FILES if (model_dir / n).is_file()]
    tokenizer = [model_dir / n for n in TOKENIZER_FILES if (model_dir / n).is_file()]
    return {
        "weights": _hash_files(weights),
        "config": _hash_files(config),
        "tokenizer": _hash_files(tokenizer),
        "chat_template": hashlib.sha256(_template_text(model_dir).encode()).hexdigest(),
    }


def combined(parts: Mapping[str, str]) -> str:
    blob = json.dumps({k: parts[k] for k in sorted(parts)}, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def model_identity(ident: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a run is bound to, from a provider's ``identity()``.

    Local models (``path`` set) get the four parts and their combined sha256; other
    providers keep the sha256 they report (a replay file's, or None for a server).
    """
    path = ident.get("path")
    if path and Path(str(path)).is_dir():
        parts = model_parts(Path(str(path)))
        return {"spec": ident.get("spec"), "sha256": combined(parts), "sha256_parts": parts,
                "sha256_scope": "+".join(PARTS)}
    return {"spec": ident.get("spec"), "sha256": ident.get("sha256"), "sha256_parts": None,
            "sha256_scope": ident.get("sha256_scope") or ("file" if ident.get("sha256")
                                                          else "none")}


def describe_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Which part of a model identity changed, for a one-line refusal."""
    op, np_ = old.get("sha256_parts") or {}, new.get("sha256_parts") or {}
    changed = [p for p in PARTS if op.get(p) != np_.get(p)] if op and np_ else []
    if changed:
        return "model " + ", ".join(
            f"{p} (sha256 {str(op.get(p))[:12]} -> {str(np_.get(p))[:12]})" for p in changed)
    if old.get("spec") != new.get("spec"):
        return f"model spec ({old.get('spec')} -> {new.get('spec')})"
    return (f"model sha256 ({str(old.get('sha256'))[:12]} -> "
            f"{str(new.get('sha256'))[:12]})")
