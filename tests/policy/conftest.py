"""Shared fixtures: the real SmolLM2, prepared once per machine into the spade cache."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (extra: hf)")
    from spade.errors import UserError
    from spade.policy import prepare_smollm2

    try:
        return prepare_smollm2()
    except UserError as exc:  # package not installed on this machine
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def smollm2(smollm2_path: Path) -> Any:
    import torch

    from spade.policy import HFPolicy

    # Tests run one per core (pytest -n auto on a shared 2-core machine): intra-op threads
    # would only contend with each other, which makes first calls many times slower.
    torch.set_num_threads(1)
    return HFPolicy.from_path(smollm2_path, device="cpu")
