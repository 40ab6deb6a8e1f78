"""2-D projection of a batch's embeddings, saved as a PNG.

PCA (numpy SVD, signs fixed so the picture is deterministic) by default; t-SNE from
scikit-learn when asked for and installed (seeded; PCA for fewer than 5 points).
Matplotlib is imported lazily and drawn through the object API on an Agg canvas, so no
global backend or pyplot state is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from spade.errors import UserError


def pca_2d(embeddings: np.ndarray) -> np.ndarray:
    """Project rows onto their first two principal components (zeros where undefined)."""
    x = np.asarray(embeddings, dtype=np.float64)
    out = np.zeros((len(x), 2))
    if len(x) < 2:
        return out
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    for k in range(min(2, len(vt))):
        axis = vt[k]
        axis = axis if axis[np.argmax(np.abs(axis))] >= 0 else -axis
        out[:, k] = centred @ axis
    return out


def project_2d(
    embeddings: np.ndarray, *, method: Literal["pca", "tsne"] = "pca", seed: int = 0
) -> np.ndarray:
    """``(n, 2)`` coordinates of the rows."""
    if method == "pca" or len(embeddings) < 5:
        return pca_2d(embeddings)
    if method != "tsne":
        raise UserError(f"unknown projection {method!r} (pca, tsne)")
    try:
        from sklearn.manifold import TSNE
    except ImportError:
        raise UserError("t-SNE projection needs scikit-learn; use method='pca'") from None
    perplexity = float(min(30, max(2, (len(embeddings) - 1) // 3)))
    tsne = TSNE(n_components=2, perplexity=perplexity, random_state=seed, init="pca")
    return np.asarray(tsne.fit_transform(np.asarray(embeddings, dtype=np.float64)))


def projection_png(
    embeddings: np.ndarray,
    path: str | Path,
    *,
    labels: Sequence[str] | None = None,
    title: str = "Environment embeddings (2-D projection)",
    method: Literal["pca", "tsne"] = "pca",
    seed: int = 0,
) -> Path:
    """Scatter the projected embeddings, coloured by ``labels`` (e.g. skill), to ``path``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError("the projection plot needs matplotlib (the 'eval' extra)") from None
    if labels is not None and len(labels) != len(embeddings):
        raise ValueError(f"{len(labels)} labels for {len(embeddings)} points")
    coords = project_2d(embeddings, method=method, seed=seed)
    fig = Figure(figsize=(6, 5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    groups = sorted(set(labels)) if labels is not None else [None]
    for group in groups:
        idx = [k for k in range(len(coords)) if labels is None or labels[k] == group]
        ax.scatter(coords[idx, 0], coords[idx, 1], s=28, alpha=0.8, label=group)
    if labels is not None:
        ax.legend(fontsize=8, loc="best")
    ax.set_title(f"{title} [{method}, n={len(coords)}]", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
