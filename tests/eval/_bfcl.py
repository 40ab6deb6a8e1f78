"""Helpers for the BFCL tests: the bfcl-eval venv (built by the project's own mechanism)
and in-process runs restricted to some categories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _evalrun import data_dir
from spade.eval._runner import EvalConfig, run_eval


def bfcl_python() -> Path:
    """The bfcl-eval interpreter; built here if missing (``nox -s tests`` builds it first)."""
    from spade.eval.suites.bfcl_venv import ensure_python

    from spade.errors import UserError

    try:
        return ensure_python(progress=False)
    except UserError as exc:
        pytest.skip(f"the bfcl-eval venv cannot be created on this machine: {exc}")


def bfcl_data() -> Path:
    d = data_dir()
    if not (d / "bfcl_v4" / "BFCL_v4_simple_python.json").is_file():
        pytest.skip(f"BFCL v4 data not found under {d}")
    return d


def run(out: Path, model: str, categories: list[str], limit: int | None, **kw: Any
        ) -> dict[str, Any]:
    overrides = {"limit": limit, **kw.pop("overrides", {})}
    extra = {"categories": categories, **kw.pop("extra", {})}
    cfg = EvalConfig(model=model, suites=("bfcl_v4",), out=out, data_dir=bfcl_data(),
                    overrides=overrides, extra=extra, quiet=True, **kw)
    return run_eval(cfg)


def records(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    path = out / "samples" / "bfcl_v4.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {(str(r["id"]), int(r["sample"])): r for r in rows}


def replay_file(path: Path, scripts: dict[str, Any]) -> Path:
    """A replay file of episode scripts (``{"turns": [[step, ...], ...]}``) keyed by id."""
    lines = [json.dumps({"suite": "bfcl_v4", "id": key, "sample": 0,
                         "completion": json.dumps(script)}) for key, script in scripts.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
