"""Shared fixtures: the tiny random model (built in code, cached per session)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("trl")
    from train._models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture()
def cache_env(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SPADE_CACHE_DIR pointing where ``model.path: tiny`` finds the fixture's model."""
    root = tiny_model_dir.parent / "cache"
    target = root / "models" / "tiny-llama-v1"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(tiny_model_dir)
    monkeypatch.setenv("SPADE_CACHE_DIR", str(root))
    return root
