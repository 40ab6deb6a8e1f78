"""Which RLVE environments the installed ``rlve-gym`` package offers, without running it.

The package (import name ``Gym``) registers every environment and its parameter controller
in two index modules (``Gym/environments/__init__.py`` and
``Gym/parameter_controllers/__init__.py``): an import line per class and a dict from the
environment id to the class. Importing those indexes would run all ~400 environment modules
(and torch) in this process; RLVE code, like generated code, runs only in the sandbox. So
the indexes are read as text: id -> class name -> the subpackage that defines it.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from spade.errors import UserError

#: The RLVE baseline's environments (the paper's fixed-environment baseline).
PAPER_ENVS: tuple[str, ...] = (
    "Division", "EuclidGame", "GCDOne_Counting", "HamiltonianPath", "LampChanging",
    "LargestConvexPolygon", "Multiplication", "PCPPermutation", "Path_NoGoingBack_Counting",
    "SAT", "ShortestPath", "Sorting", "SpiralMatrix", "SubsequenceReversalLNDS",
    "UndamagedSubmatrixCounting", "WYRLevelingGround",
)

PACKAGE = "Gym"
DISTRIBUTION = "rlve-gym"

_IMPORT = re.compile(r"^from Gym\.(environments|parameter_controllers)\.(\w+) import ([\w, ]+)$",
                     re.MULTILINE)
_ENTRY = re.compile(r'^\s*"([^"]+)"\s*:\s*(\w+)\s*,?\s*$', re.MULTILINE)


@dataclass(frozen=True)
class RlveSpec:
    """Where one RLVE environment and its parameter controller live inside the package."""

    env_id: str
    env_module: str  # e.g. "environments/division/environment.py" (relative to the package)
    env_class: str
    controller_module: str
    controller_class: str


def package_root() -> Path:
    """The installed ``Gym`` package directory (found, not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"RLVE is not installed: pip install {DISTRIBUTION}")
    return Path(next(iter(spec.submodule_search_locations)))


def _index(root: Path, kind: str, module: str) -> dict[str, tuple[str, str]]:
    """id -> (relative module file, class name) from one index module."""
    path = root / kind / "__init__.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{DISTRIBUTION}: unreadable index {path} ({exc.strerror})") from None
    where: dict[str, str] = {}
    for _, package, names in _IMPORT.findall(text):
        for name in names.split(","):
            where[name.strip()] = f"{kind}/{package}/{module}.py"
    out = {}
    for env_id, cls in _ENTRY.findall(text):
        if cls in where:
            out[env_id] = (where[cls], cls)
    if not out:
        raise UserError(f"{DISTRIBUTION}: no environments found in {path}")
    return out


@cache
def _catalog(root: Path) -> dict[str, RlveSpec]:
    envs = _index(root, "environments", "environment")
    controllers = _index(root, "parameter_controllers", "parameter_controller")
    return {
        env_id: RlveSpec(env_id, module, cls, *controllers[env_id])
        for env_id, (module, cls) in envs.items() if env_id in controllers
    }


def rlve_catalog() -> dict[str, RlveSpec]:
    """Every RLVE environment id that has both an environment and a parameter controller."""
    return dict(_catalog(package_root()))


def rlve_spec(env_id: str) -> RlveSpec:
    """The spec of one id; an unknown id is a one-line error naming close matches."""
    catalog = _catalog(package_root())
    if env_id in catalog:
        return catalog[env_id]
    close = difflib.get_close_matches(env_id, list(catalog), n=3, cutoff=0.6)
    more = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UserError(f"unknown RLVE environment {env_id!r}{more}; {len(catalog)} are installed")
