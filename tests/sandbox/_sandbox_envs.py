"""Build tiny environment sources for the sandbox tests."""

from __future__ import annotations

import textwrap

import pytest

from spade.sandbox import EnvFault, FaultKind, Sandbox


def env_source(
    reset: str = "", step: str = "", module: str = "", obs: str = '"obs"', base: str = "TextEnv"
) -> str:
    """An env whose reset/step run the given code (each a block of statements)."""
    reset_block = textwrap.indent(textwrap.dedent(reset).strip("\n") + "\n", " " * 8)
    step_block = textwrap.indent(textwrap.dedent(step).strip("\n") + "\n", " " * 8)
    return (
        f"from spade.envs import {base}\n"
        + textwrap.dedent(module)
        + f"\n\nclass ProbeEnv({base}):\n"
        + "    def reset(self, seed=None, options=None):\n"
        + "        super().reset(seed=seed)\n"
        + reset_block
        + f"        return {obs}, {{}}\n\n"
        + "    def step(self, action):\n"
        + step_block
        + "        return 'done', 1.0, True, False, {}\n"
    )


def outcome(sandbox: Sandbox, source: str, *, step: bool = True) -> EnvFault:
    """Load, reset and step; the first fault (or a fault built from late violations)."""
    try:
        env = sandbox.load(source)
    except EnvFault as fault:
        return fault
    with env:
        try:
            env.reset(seed=0)
            if step:
                env.step("go")
        except EnvFault as fault:
            return fault
        late = env.violations
    if late:
        return EnvFault(FaultKind.VIOLATION, str(late[0]), late)
    pytest.fail("hostile environment ran without any fault or violation")


def assert_violation(fault: EnvFault, category: str, needle: str = "") -> None:
    cats = {v.category for v in fault.violations}
    assert fault.kind == FaultKind.VIOLATION, fault
    assert category in cats, (cats, fault)
    assert needle in str(fault) + " ".join(map(str, fault.violations)), fault
