"""A frozen-designer run exports a static pool that loads back; metrics helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cycle_configs import tiny_config

from spade.cycle import load_pool, run_selfplay, without_timing
from spade.cycle._metrics import distribution, round_floats
from spade.errors import UserError
from spade.sandbox import Sandbox
from spade.validate import validate_env


@pytest.mark.needs("corpora")
def test_frozen_designer_static_pool_loads_back(tmp_path: Path, sandbox: Sandbox) -> None:
    config = tiny_config(**{"policy.frozen_designer": "scripted", "cycles": 1})
    summary = run_selfplay(config, tmp_path / "run", progress=lambda _: None, keep_results=True)
    result = summary.results[0]
    assert result.designer_frozen
    pool = load_pool(tmp_path / "run")
    assert [p.env_id for p in pool] == [d.env_id for d in result.designs if d.valid]
    assert load_pool(tmp_path / "run" / "envs") == pool
    for env in pool:  # a pool entry is a complete, valid environment with its hint
        assert validate_env(env.source, hint=env.hint, sandbox=sandbox).valid
        assert env.kind == "game" and env.skill


@pytest.mark.needs("corpora")
def test_tampered_pool_is_rejected(tmp_path: Path) -> None:
    run_selfplay(tiny_config(cycles=1), tmp_path / "run", progress=lambda _: None)
    pool = load_pool(tmp_path / "run")
    (tmp_path / "run" / "envs" / f"{pool[0].env_id}.py").write_text("# edited\n")
    with pytest.raises(UserError, match="sha256"):
        load_pool(tmp_path / "run")
    with pytest.raises(UserError, match="no environment pool"):
        load_pool(tmp_path)


def test_without_timing_and_rounding() -> None:
    metrics = {"a_s": 1.0, "b": {"c_ms": 2, "runtime": 3, "d": [{"e_s": 1, "f": 0.1234567891}]},
               "timing_s": {"x_s": 1}, "n": 1}
    # only timing keys go (``*_s``, ``*_ms``, ``timing_s``); other names stay, e.g. counts
    assert without_timing(round_floats(metrics)) == {
        "b": {"runtime": 3, "d": [{"f": 0.123457}]}, "n": 1}
    json.dumps(round_floats({"nan": float("nan")}), allow_nan=False)  # non-finite -> null


def test_distribution_histogram() -> None:
    d = distribution([0.0, 0.05, 0.1, 0.55, 1.0])
    assert d["n"] == 5 and d["max"] == 1.0 and d["median"] == 0.1
    assert d["histogram"]["counts"] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert distribution([])["mean"] is None
