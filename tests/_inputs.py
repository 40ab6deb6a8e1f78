"""Inputs the tests read that are not part of the repository: the benchmark data and the
bundled corpora (found as the commands find them: an environment variable, else beside the
checkout). A test that needs one is skipped, naming where it looked, when it is absent;
it never errors or fails for want of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def _benchmark_data() -> tuple[Path, str | None]:
    from spade.eval.data import ENV_VAR, resolve_data_dir

    root = resolve_data_dir()
    if (root / "aime" / "aime24.jsonl").is_file():
        return root, None
    return root, f"shared benchmark data not found at {root} (set {ENV_VAR})"


def _corpora() -> tuple[Path, str | None]:
    from spade.corpus import BUNDLED, CORPORA_ENV, default_corpora_dir

    root = default_corpora_dir()
    absent = [name for name in BUNDLED if not (root / f"{name}.jsonl").is_file()]
    if not absent:
        return root, None
    return root, f"bundled corpora ({', '.join(absent)}) not found at {root} (set {CORPORA_ENV})"


#: ``needs`` marker name -> (where it is, why it is missing or ``None``).
INPUTS: dict[str, Callable[[], tuple[Path, str | None]]] = {
    "benchmark_data": _benchmark_data,
    "corpora": _corpora,
}


def require(name: str) -> Path:
    """Where input ``name`` is; skips the calling test (with the reason) when it is absent."""
    if name not in INPUTS:
        raise ValueError(f"unknown test input {name!r}; known: {', '.join(INPUTS)}")
    root, why = INPUTS[name]()
    if why is not None:
        pytest.skip(why)
    return root
