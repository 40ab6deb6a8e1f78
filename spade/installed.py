"""Whether an optional package is installed, asked so that a folder cannot pass for it.

Test runners put test folders on ``sys.path``, and a folder without ``__init__.py`` that
carries a package's name (``tests/train/openrlhf``) is found by ``find_spec`` as a namespace
package of that name: a check that trusts ``find_spec`` alone then takes the package for
installed. An installed package or module has a file of its own (its spec has an origin).
"""

from __future__ import annotations

import importlib.util


def is_installed(name: str) -> bool:
    """True when the module or package ``name`` is installed here with code of its own, not
    merely folders of that name on ``sys.path`` (found without importing it)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False
    return spec is not None and spec.origin is not None
