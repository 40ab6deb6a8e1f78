"""The one template renderer: text files in a package's ``templates/`` folder, filled in with
:class:`string.Template` (``$name`` placeholders, ``$$`` for a literal dollar sign).

Prompts and generated sources live in files, not in code. ``$name`` placeholders keep LaTeX
braces and Python code in the templates literal, and substituted values are never expanded
again, so a corpus document or model output containing ``$`` or ``{`` cannot break or
inject into a prompt. A missing value is a programming error (``KeyError``).
"""

from __future__ import annotations

import string
from functools import cache
from importlib import resources


@cache
def read_template(package: str, name: str) -> str:
    """The text of ``templates/<name>`` inside ``package`` (e.g. ``"spade.designer"``)."""
    return resources.files(package).joinpath("templates", name).read_text("utf-8")


def render_template(package: str, name: str, /, **values: object) -> str:
    """``templates/<name>`` of ``package`` with every ``$placeholder`` filled from ``values``."""
    text = read_template(package, name)
    return string.Template(text).substitute({k: str(v) for k, v in values.items()})
