"""The agent's prompt texts, in ``templates/`` next to this module (``$name`` placeholders)."""

from __future__ import annotations

from spade.templates import render_template


def render(template: str, /, **values: object) -> str:
    """Fill the agent template ``template`` (via :func:`spade.templates.render_template`)."""
    return render_template("spade.episodes", template, **values)
