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
    from spade.policy import HFPolicy

    return HFPolicy.from_path(smollm2_path, device="cpu")
