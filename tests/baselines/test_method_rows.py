"""A checkpoint's recipe label and kind reach the evaluation results the report reads."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from spade.eval._runs import METHOD_KINDS
from spade.eval.providers._checkpoint import MANIFEST, trained_method
from spade.train._checkpoint import MANIFEST as TRAIN_MANIFEST
from spade.train.recipe import MethodSettings


def test_every_recipe_kind_is_a_report_kind() -> None:
    kinds = typing.get_args(MethodSettings.model_fields["kind"].annotation)
    assert set(kinds) <= set(METHOD_KINDS)
    assert MANIFEST == TRAIN_MANIFEST


def test_trained_method_reads_the_manifest(tmp_path: Path) -> None:
    step = tmp_path / "checkpoints" / "step-2"
    step.mkdir(parents=True)
    (step / "config.json").write_text("{}")
    assert trained_method(step) == {}
    (step / MANIFEST).write_text(json.dumps(
        {"step": 2, "method": {"label": "RLVE (fixed environments)", "kind": "fixed_env"}}))
    assert trained_method(step) == {
        "method": {"label": "RLVE (fixed environments)", "kind": "fixed_env"}}
    (step / MANIFEST).write_text(json.dumps({"method": {"label": "x", "kind": "bogus"}}))
    assert trained_method(step) == {}
    (step / MANIFEST).write_text("not json")
    assert trained_method(step) == {}
