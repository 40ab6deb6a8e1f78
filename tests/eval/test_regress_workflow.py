"""The CI gate workflow parses and calls the real gate with arguments it accepts."""

from __future__ import annotations

import argparse
import ast
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "eval-gate.yml"
ENV = {"$CHECKPOINT": "hf:ckpt", "$EXPERIMENT": "cpu"}


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def _nox_calls(workflow: dict[Any, Any]) -> list[list[str]]:
    out = []
    for step in workflow["jobs"]["gate"]["steps"]:
        for line in step.get("run", "").splitlines():
            words = [ENV.get(w, w) for w in shlex.split(line, comments=True)]
            if words[:1] == ["nox"]:
                out.append(words)
    return out


def test_workflow_shape(workflow: dict[Any, Any]) -> None:
    assert workflow["name"] == "eval-gate"
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert "checkpoint" in triggers["workflow_dispatch"]["inputs"]
    env = workflow["jobs"]["gate"]["env"]
    assert "whl/cpu" in env["SPADE_TORCH_SPEC"]  # CPU torch on a hosted runner


def test_the_gate_call_parses(workflow: dict[Any, Any]) -> None:
    (words,) = _nox_calls(workflow)
    assert words[:3] == ["nox", "-s", "gate"] and words[3] == "--"
    sessions = {n.name for n in ast.parse((ROOT / "noxfile.py").read_text()).body
                if isinstance(n, ast.FunctionDef)}
    assert "gate" in sessions
    from spade.eval import cli_experiment

    parser = argparse.ArgumentParser(exit_on_error=False)
    cli_experiment.add_arguments(parser)
    args = parser.parse_args(["gate", *words[4:]])
    assert args.target == ENV["$CHECKPOINT"] and args.experiment == ENV["$EXPERIMENT"]
