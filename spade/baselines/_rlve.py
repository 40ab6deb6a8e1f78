"""RLVE environments as SPADE environments: one generated source per (id, difficulty).

The environment id of a play names both, ``rlve-<RLVE id>-d<difficulty>``, so a trajectory
says which problem family and level it played, and every level is its own sandboxed source
(instances of one level are reused between episodes by the handle pool). The problem is
fixed by the play's seed: ``reset(seed)`` draws the controller parameter and the RLVE
generator seed from it, so G plays with one seed play one problem.
"""

from __future__ import annotations

import re

from spade.baselines._catalog import rlve_spec
from spade.baselines._templates import answer_format, render
from spade.errors import UserError

PREFIX = "rlve-"
_ID = re.compile(r"^rlve-(\w+)-d(\d+)$")


def rlve_env_id(rlve_id: str, difficulty: int) -> str:
    """The SPADE environment id of one RLVE environment at one difficulty."""
    if difficulty < 0:
        raise ValueError(f"difficulty must be >= 0, not {difficulty}")
    return f"{PREFIX}{rlve_id}-d{difficulty}"


def parse_rlve_env_id(env_id: str) -> tuple[str, int]:
    """``(RLVE id, difficulty)`` of an id made by :func:`rlve_env_id`."""
    match = _ID.match(env_id)
    if match is None:
        raise UserError(f"not an RLVE environment id: {env_id!r} (expected rlve-<id>-d<N>)")
    return match.group(1), int(match.group(2))


def rlve_source(rlve_id: str, difficulty: int) -> str:
    """The sandbox source of ``rlve_id`` at ``difficulty`` (unknown ids: one-line error)."""
    if difficulty < 0:
        raise ValueError(f"difficulty must be >= 0, not {difficulty}")
    spec = rlve_spec(rlve_id)
    return render(
        "rlve_env.py.tmpl",
        rlve_id=spec.env_id, rlve_id_literal=repr(spec.env_id), difficulty=int(difficulty),
        env_module=repr(spec.env_module), env_class=repr(spec.env_class),
        controller_module=repr(spec.controller_module),
        controller_class=repr(spec.controller_class), answer_format=repr(answer_format()),
    )


def rlve_source_for(env_id: str) -> str:
    """The source behind an ``rlve-<id>-d<N>`` environment id."""
    return rlve_source(*parse_rlve_env_id(env_id))
