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


class RlveConfig(_Model):
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


class ReasoningGymConfig(_Model):
    kind: Literal["reasoning_gym"] = "reasoning_gym"
    datasets: tuple[RgDataset, ...] = Field(min_length=1)


class StaticPoolConfig(_Model):
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


class FamiliesConfig(_Model):
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


#: A ``fixed_env:`` block: which problem source a fixed-environment baseline plays.
FixedEnvConfig = Annotated[RlveConfig | ReasoningGymConfig | StaticPoolConfig | FamiliesConfig,
                           Field(discriminator="kind")]


def problem_source(config: RlveConfig | ReasoningGymConfig | StaticPoolConfig | FamiliesConfig,
                   seed: int) -> ProblemSource:
    """The configured problem source (missing packages or data: one-line error)."""
    if isinstance(config, FamiliesConfig):
        return FamilyProblems(config.families, seed)
    if isinstance(config, RlveConfig):
        return RlveProblems(config.environments, config.window, seed)
    if isinstance(config, ReasoningGymConfig):
        check_installed([d.name for d in config.datasets])
        return RgProblems(config.datasets, seed)
    return StaticProblems(config.resolved_path(), seed, config.sha256)
