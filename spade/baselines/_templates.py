"""Texts and environment-source templates of the baselines, in ``templates/`` here."""

from __future__ import annotations

import string
from functools import cache
from importlib import resources


@cache
def read(name: str) -> str:
    return resources.files("spade.baselines").joinpath("templates", name).read_text("utf-8")


def render(template: str, /, **values: object) -> str:
    """Fill ``template`` (a file name); values are inserted literally (never re-expanded)."""
    return string.Template(read(template)).substitute({k: str(v) for k, v in values.items()})


def answer_format() -> str:
    """The instruction that ends every single-turn problem's observation."""
    return read("answer_format.md").strip()
