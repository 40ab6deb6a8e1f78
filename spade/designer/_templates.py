"""The designer's prompt texts and YAML tables, in ``templates/`` next to this module.

Rendering is :func:`spade.templates.render_template` (``$name`` placeholders).
"""

from __future__ import annotations

from typing import Any

import yaml

from spade.templates import read_template, render_template

PACKAGE = "spade.designer"


def render(template: str, /, **values: object) -> str:
    """Fill the designer template ``template`` (a file name in ``templates/``)."""
    return render_template(PACKAGE, template, **values)


def load_yaml(name: str) -> dict[str, Any]:
    """A YAML mapping from the templates folder (skills, difficulty levels)."""
    data = yaml.safe_load(read_template(PACKAGE, name))
    if not isinstance(data, dict):
        raise ValueError(f"template {name} is not a mapping")
    return data
