"""Texts and environment-source templates of the baselines, in ``templates/`` here."""

from __future__ import annotations

from spade.templates import read_template, render_template


def read(name: str) -> str:
    return read_template("spade.baselines", name)


def render(template: str, /, **values: object) -> str:
    """Fill ``template`` (a file name) via :func:`spade.templates.render_template`."""
    return render_template("spade.baselines", template, **values)


def answer_format() -> str:
    """The instruction that ends every single-turn problem's observation."""
    return read("answer_format.md").strip()
