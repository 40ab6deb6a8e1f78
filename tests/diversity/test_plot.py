"""2-D projection and the PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spade.diversity import pca_2d, project_2d, projection_png


def _clusters() -> np.ndarray:
    rng = np.random.default_rng(0)
    a = rng.normal(0, 0.05, (6, 16)) + np.eye(16)[0]
    b = rng.normal(0, 0.05, (6, 16)) + np.eye(16)[1]
    return np.vstack([a, b])


def test_pca_separates_clusters_deterministically() -> None:
    coords = pca_2d(_clusters())
    assert coords.shape == (12, 2)
    first, second = coords[:6, 0], coords[6:, 0]
    assert first.max() < second.min() or second.max() < first.min()
    assert np.array_equal(coords, pca_2d(_clusters()))
    assert np.array_equal(pca_2d(np.ones((1, 4))), np.zeros((1, 2)))


def test_png_written(tmp_path: Path) -> None:
    out = projection_png(_clusters(), tmp_path / "sub" / "div.png", labels=["a"] * 6 + ["b"] * 6)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(ValueError):
        projection_png(_clusters(), tmp_path / "x.png", labels=["a"])


@pytest.mark.slow
def test_tsne_projection() -> None:
    pytest.importorskip("sklearn")
    coords = project_2d(_clusters(), method="tsne", seed=1)
    assert coords.shape == (12, 2) and np.isfinite(coords).all()
    assert np.allclose(coords, project_2d(_clusters(), method="tsne", seed=1))
