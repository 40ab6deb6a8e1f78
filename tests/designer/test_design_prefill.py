"""The designer prefill: the skeleton text, and that prefix + completion is what is parsed
and validated (through the real validator in the real sandbox)."""

from __future__ import annotations

import ast

import pytest
from _prefilled_design import PREFILLED_REPLY

from spade.designer import (
    ParseFailure,
    Prefill,
    as_prefill,
    env_class_name,
    parse_design,
    prefill_text,
    with_prefill,
)
from spade.errors import UserError

COMPLETION = PREFILLED_REPLY



def test_none_is_empty_and_unknown_is_one_line() -> None:
    assert prefill_text("none", "games", "logic") == ""
    assert as_prefill("SKELETON") is Prefill.SKELETON
    with pytest.raises(UserError, match="unknown designer prefill 'full'"):
        as_prefill("full")


@pytest.mark.parametrize(("setting", "base"), [("games", "TextEnv"), ("tool_use", "ToolEnv")])
def test_skeleton_opens_a_fence_with_the_contract_header(setting: str, base: str) -> None:
    skill = "optimisation" if setting == "games" else "api_orchestration"
    text = prefill_text("skeleton", setting, skill)
    name = env_class_name(skill)
    assert text.startswith("```python\n")
    assert f"from spade.envs import {base}" in text
    assert f"\nclass {name}({base}):\n" in text and name.endswith("Env")
    body = text.removeprefix("```python\n") + 'x"""\n    max_turns = 1\n'
    ast.parse(body)  # the skeleton is the start of a valid module


def test_class_names_from_skills() -> None:
    assert env_class_name("math") == "MathEnv"
    assert env_class_name("multi_step_workflow") == "MultiStepWorkflowEnv"


def test_parser_reads_prefix_plus_completion() -> None:
    prefix = prefill_text("skeleton", "games", "logic")
    alone = parse_design(COMPLETION)
    assert alone.failure in (ParseFailure.NO_CODE_BLOCK, ParseFailure.NO_ENV_CLASS)
    design = parse_design(prefix + COMPLETION)
    assert design.ok, design.reason
    assert design.class_name == "LogicEnv"
    assert design.hint == "Only the last digit of the first factor matters."
    ast.parse(design.source or "")


def test_with_prefill_appends_an_open_assistant_turn() -> None:
    messages = [{"role": "user", "content": "design"}]
    assert with_prefill(messages, "") == messages
    assert with_prefill(messages, "```python\n")[-1] == {"role": "assistant",
                                                          "content": "```python\n"}


@pytest.mark.bwrap
def test_prefilled_design_passes_the_real_validator() -> None:
    from spade.designer import validate_design
    from spade.sandbox import Sandbox, SandboxLimits

    design = parse_design(prefill_text("skeleton", "games", "logic") + COMPLETION)
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=5.0)) as sb:
        verdict = validate_design(design, sandbox=sb)
    assert verdict.valid, verdict.reason
