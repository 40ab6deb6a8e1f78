"""Build tiny environment sources for the sandbox tests."""

from __future__ import annotations

import textwrap


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
