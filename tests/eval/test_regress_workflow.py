"""The example CI workflow parses and calls the real commands with flags they accept."""

from __future__ import annotations

import argparse
import importlib
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "eval-gate.yml"
ENV = {
    "$CHECKPOINT": "hf:ckpt",
    "$REFERENCE_RUN": "results/gate/reference",
    "$SUITES": "aime24,gpqa_diamond",
}

SHELL_OPERATORS = {">", ">>", "||", "&&", "|", ";"}


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def _commands(workflow: dict[Any, Any], prefix: str) -> list[list[str]]:
    out = []
    for step in workflow["jobs"]["gate"]["steps"]:
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            words = [ENV.get(w, w) for w in words]
            cut = [i for i, w in enumerate(words) if w in SHELL_OPERATORS]
            words = words[: cut[0]] if cut else words
            if words[: len(prefix.split())] == prefix.split():
                out.append(words[len(prefix.split()) :])
    return out


def _parse(module: str, words: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    importlib.import_module(module).add_arguments(parser)
    return parser.parse_args(words)


def test_workflow_shape(workflow):
    assert workflow["name"] == "eval-gate"
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert "checkpoint" in triggers["workflow_dispatch"]["inputs"]
    runs = [s.get("run", "") for s in workflow["jobs"]["gate"]["steps"]]
    torch_step = next(i for i, r in enumerate(runs) if "pip install torch==2.13.0" in r)
    project_step = next(i for i, r in enumerate(runs) if 'pip install -e ".[eval,hf]"' in r)
    assert torch_step <= project_step
    torch_line = next(x for x in runs[torch_step].splitlines() if "torch==" in x)
    assert "whl/cpu" in torch_line
    if torch_step == project_step:
        text = runs[torch_step]
        assert text.index("torch==2.13.0") < text.index("pip install -e")


def test_regress_and_report_commands_parse(workflow):
    evals = _commands(workflow, "spade eval run")
    assert len(evals) == 1
    out_dir = evals[0][evals[0].index("--out") + 1]
    gates = _commands(workflow, "spade regress")
    assert gates
    args = _parse("eval.cli_regress", gates[0])
    assert args.candidate == out_dir and args.reference == ENV["$REFERENCE_RUN"]
    assert args.suites == [ENV["$SUITES"]] and args.alpha == 0.05
    for words in gates[1:]:
        _parse("eval.cli_regress", words)
    reports = _commands(workflow, "spade report")
    assert reports
    for words in reports:
        assert out_dir in _parse("eval.cli_report", words).runs


def test_eval_command_parses(workflow):
    cli = pytest.importorskip("eval.cli", reason="the eval run command is not built yet")
    (words,) = _commands(workflow, "spade eval")
    parser = argparse.ArgumentParser(exit_on_error=False)
    cli.add_arguments(parser)
    args = parser.parse_args(words)
    assert "run" in words and ENV["$CHECKPOINT"] in vars(args).values()
