"""The agent's prompt texts, in ``templates/`` next to this module (``$name`` placeholders)."""

from __future__ import annotations

import string
from functools import cache
from importlib import resources


@cache
def _read(name: str) -> str:
    return resources.files("spade.episodes").joinpath("templates", name).read_text("utf-8")


def render(template: str, /, **values: object) -> str:
    """Fill ``template`` (a file name); values are inserted literally (never re-expanded)."""
    return string.Template(_read(template)).substitute({k: str(v) for k, v in values.items()})
