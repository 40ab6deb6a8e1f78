"""The family registry: ``families.yaml`` (grids, hints, skills) plus one source template per
family, rendered into complete environment modules.

A module starts with exactly the designer's code skeleton (``prefill: skeleton``) for its
skill, so the same text is a valid reply whether or not the designer's reply was prefilled.
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from spade.errors import UserError

PACKAGE = "spade.families"


@dataclass(frozen=True)
class Family:
    """One parameterised family: its skill, a one-line summary, hint and parameter axes."""

    name: str
    skill: str
    summary: str
    hint: str
    axes: tuple[tuple[str, tuple[Any, ...]], ...]

    def grid(self) -> list[dict[str, Any]]:
        """Every parameter combination, in a fixed order (axes as written, values as listed)."""
        out = []
        for combo in itertools.product(*(values for _, values in self.axes)):
            params: dict[str, Any] = {}
            for (axis, _), value in zip(self.axes, combo, strict=True):
                if isinstance(value, dict):
                    params.update(value)
                else:
                    params[axis] = value
            out.append(params)
        return out

    def instances(self) -> list[FamilyInstance]:
        """All distinct modules of the family, in grid order."""
        return [self.render(i, params) for i, params in enumerate(self.grid())]

    def render(self, index: int, params: dict[str, Any]) -> FamilyInstance:
        from spade.designer import env_class_name

        values = {**params, "class_name": env_class_name(self.skill)}
        source = string.Template(_template(self.name)).substitute(
            {k: str(v) for k, v in values.items()})
        hint = " ".join(string.Template(self.hint).substitute(
            {k: str(v) for k, v in params.items()}).split())
        return FamilyInstance(self.name, index, self.skill, source, hint, dict(params))


@dataclass(frozen=True)
class FamilyInstance:
    """One rendered module of a family: ``<family>/<index>`` names it across versions' data."""

    family: str
    index: int
    skill: str
    source: str
    hint: str
    params: dict[str, Any] = field(hash=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.family}/{self.index}"


@cache
def _template(name: str) -> str:
    return resources.files(PACKAGE).joinpath("templates", f"{name}.py.tmpl").read_text("utf-8")


@cache
def _table() -> dict[str, Any]:
    text = resources.files(PACKAGE).joinpath("families.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or "families" not in data:
        raise ValueError("families.yaml: expected a mapping with 'version' and 'families'")
    return data


def families_version() -> int:
    """The library's version (bumped whenever any rendered module or hint changes)."""
    return int(_table()["version"])


def list_families() -> list[Family]:
    """Every family, in registry order."""
    out = []
    for name, entry in _table()["families"].items():
        axes = tuple((str(k), tuple(v)) for k, v in entry["axes"].items())
        out.append(Family(str(name), str(entry["skill"]), str(entry["summary"]),
                          " ".join(str(entry["hint"]).split()), axes))
    return out


def get_family(name: str) -> Family:
    """The family called ``name``; a one-line ``UserError`` lists the known ones."""
    for family in list_families():
        if family.name == name:
            return family
    known = ", ".join(f.name for f in list_families())
    raise UserError(f"unknown environment family {name!r}; known: {known}")


def all_instances(names: tuple[str, ...] = ()) -> list[FamilyInstance]:
    """Every module of the named families (all families when ``names`` is empty)."""
    chosen = [get_family(n) for n in names] if names else list_families()
    return [i for f in chosen for i in f.instances()]
