"""Real environment sources from the bundled examples."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "spade" / "envs" / "examples"


@pytest.fixture(scope="session")
def example_sources() -> list[str]:
    paths = sorted(p for p in EXAMPLES.glob("*.py") if p.name != "__init__.py")
    assert len(paths) >= 4
    return [p.read_text() for p in paths]


@pytest.fixture(scope="session")
def number_guess() -> str:
    return (EXAMPLES / "number_guess.py").read_text()
