"""Reasoning Gym datasets as SPADE environments: a dataset item per play, scored by RG.

One generated source per dataset configuration (name, seed, size, params); the play's seed
is the item index, so G plays with one seed answer one item. The reward is the dataset's own
``score_answer`` on the answer (the last ``<answer>`` tag, else the boxed action).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from spade.baselines._templates import answer_format, render
from spade.errors import UserError

PREFIX = "rg-"
_NAME = re.compile(r"^[a-z0-9_]+$")


class RgDataset(BaseModel):
    """One Reasoning Gym dataset of the pool: which items exist (seed, size, params)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    seed: int = Field(ge=0)
    size: int = Field(ge=1)
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"not a Reasoning Gym dataset name: {value!r}")
        return value

    @field_validator("params")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"params must be plain JSON ({exc})") from None
        return value

    @property
    def env_id(self) -> str:
        return f"{PREFIX}{self.name}"


def dataset_module(name: str) -> str:
    """The module that registers dataset ``name`` (asked of the installed package)."""
    check_installed([name])
    from reasoning_gym.factory import DATASETS

    return str(DATASETS[name][0].__module__)


def rg_source(dataset: RgDataset) -> str:
    """The sandbox source serving the items of ``dataset``."""
    return render(
        "rg_env.py.tmpl",
        dataset=dataset.name, dataset_literal=repr(dataset.name),
        dataset_module=repr(dataset_module(dataset.name)), data_seed=dataset.seed,
        size=dataset.size, params=repr(dataset.params), answer_format=repr(answer_format()),
    )


def check_installed(names: list[str]) -> None:
    """Fail with one line when reasoning-gym or a named dataset is missing."""
    try:
        from reasoning_gym.factory import DATASETS
    except ImportError:
        raise UserError("Reasoning Gym is not installed: pip install 'spade-rl[eval]'") from None
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise UserError(f"unknown Reasoning Gym datasets: {', '.join(unknown)}")
