"""Typed configuration of a fixed-environment pool (the ``fixed_env`` block of a recipe).

Four kinds, told apart by ``kind``: ``rlve`` (RLVE environments under the sliding-window
difficulty controller), ``reasoning_gym`` (Reasoning Gym datasets, items by seed),
``static_pool`` (an exported ``spade selfplay`` pool, recorded by its sha256) and
``families`` (the bundled starter environment families, on training seeds).
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from spade.baselines._catalog import PAPER_ENVS, rlve_spec
from spade.baselines._problems import (
    FamilyProblems,
    ProblemSource,
    RgProblems,
    RlveProblems,
    StaticProblems,
)
from spade.baselines._rg import RgDataset, check_installed
from spade.baselines._window import WindowConfig
from spade.errors import UserError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RlvePool(_Model):
    kind: Literal["rlve"] = "rlve"
    #: RLVE environment ids (any installed id; the default is the paper's 16).
    environments: tuple[str, ...] = PAPER_ENVS
    window: WindowConfig = WindowConfig()

    @field_validator("environments")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name at least one RLVE environment")
        if len(set(value)) != len(value):
            raise ValueError("an RLVE environment is named twice")
        for env in value:  # the installed package's index, read as text
            try:
                rlve_spec(env)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        return value


class ReasoningGymPool(_Model):
    kind: Literal["reasoning_gym"] = "reasoning_gym"
    datasets: tuple[RgDataset, ...] = Field(min_length=1)


class StaticPool(_Model):
    kind: Literal["static_pool"] = "static_pool"
    #: An exported pool: a ``spade selfplay`` run dir or its ``envs`` dir (``${VAR}`` allowed).
    path: str
    #: The pool's sha256 (of its ``envs.jsonl``); checked when given.
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    def resolved_path(self) -> str:
        def sub(m: re.Match[str]) -> str:
            value = os.environ.get(m.group(1))
            if not value:
                raise UserError(f"fixed_env.path: environment variable {m.group(1)} is not set "
                                "(it should name an exported environment pool)")
            return value

        return _VAR.sub(sub, self.path)


class FamiliesPool(_Model):
    kind: Literal["families"] = "families"
    #: family names of ``spade.families`` (empty: every family)
    families: tuple[str, ...] = ()

    @field_validator("families")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from spade.families import get_family

        for name in value:
            try:
                get_family(name)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        if len(set(value)) != len(value):
            raise ValueError("a family is named twice")
        return value


FixedEnvPool = Annotated[RlvePool | ReasoningGymPool | StaticPool | FamiliesPool,
                         Field(discriminator="kind")]


def problem_source(pool: RlvePool | ReasoningGymPool | StaticPool | FamiliesPool,
                   seed: int) -> ProblemSource:
    """The problem source of a configured pool (missing packages or data: one-line error)."""
    if isinstance(pool, FamiliesPool):
        return FamilyProblems(pool.families, seed)
    if isinstance(pool, RlvePool):
        return RlveProblems(pool.environments, pool.window, seed)
    if isinstance(pool, ReasoningGymPool):
        check_installed([d.name for d in pool.datasets])
        return RgProblems(pool.datasets, seed)
    return StaticProblems(pool.resolved_path(), seed, pool.sha256)
