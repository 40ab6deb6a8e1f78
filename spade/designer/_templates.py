"""Prompt text lives in files next to this module; this renders them with ``string.Template``.

``$name`` placeholders only: LaTeX braces and Python code in the templates stay literal, and
substituted values are never re-expanded, so a corpus document or environment code that
contains ``$`` or ``{`` cannot break or inject into the prompt.
"""

from __future__ import annotations

import string
from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def _read(name: str) -> str:
    return resources.files("spade.designer").joinpath("templates", name).read_text("utf-8")


def render(template: str, /, **values: object) -> str:
    """Fill ``template`` (a file name); a missing value is a programming error (KeyError)."""
    return string.Template(_read(template)).substitute({k: str(v) for k, v in values.items()})


def load_yaml(name: str) -> dict[str, Any]:
    """A YAML mapping from the templates folder (skills, difficulty levels)."""
    data = yaml.safe_load(_read(name))
    if not isinstance(data, dict):
        raise ValueError(f"template {name} is not a mapping")
    return data
