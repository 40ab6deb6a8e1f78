"""The training recipe: one typed, validated YAML file per run.

A recipe embeds the self-play run config (``selfplay:``, ``spade.config.RunConfig``) and adds
what training needs: the model, the optimiser, GRPO, the step plan, checkpoints and the
backend. What training derives, a recipe file does not state (:data:`DERIVED`): a designer
prompt's designs are one GRPO group (``grpo.group_size``), the trained model plays both
roles (``model.path``), both roles sample at ``temperature`` (the loss re-scores every
sample at one temperature), a run lasts ``steps``, and
``selfplay.policy.frozen_designer`` is the one frozen-designer switch (``initial``: a frozen
copy of the initial weights, or a model spec). Unknown keys are errors and every error
names its field in one line.

Inheritance: ``extends: OTHER.yaml`` (relative to the file, or the name of a bundled
recipe) loads the parent first and deep-merges the child's mappings over it, so a paper
setting states only what differs from the common base. ``${VAR}`` in ``model.path`` is
read from the environment when the model is loaded (local checkpoints are parameters,
never downloads).

Batch arithmetic (one optimiser step)::

    samples per step   = tickets_per_step x group_size
    designer tickets   = selfplay.designer.prompts_per_cycle on regeneration steps
                         (step % regenerate_every == 0), else 0
    agent tickets      = tickets_per_step - designer tickets
    micro-batches      = samples per step / micro_batch_size (gradient accumulation)
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from spade.train._cluster import ClusterSettings
from spade.train._recipe_sections import (
    CheckpointSettings,
    GRPOSettings,
    MethodSettings,
    ModelSettings,
    OptimSettings,
    PoolSettings,
    WarmStartSettings,
)

from spade.baselines import FixedEnvConfig
from spade.config import RunConfig, fingerprint_of, set_dotted, validate_model
from spade.errors import UserError

__all__ = [
    "BUNDLED",
    "DERIVED",
    "INITIAL_WEIGHTS",
    "CheckpointSettings",
    "GRPOSettings",
    "MethodSettings",
    "ModelSettings",
    "OptimSettings",
    "PoolSettings",
    "TrainRecipe",
    "WarmStartSettings",
    "bundled_recipe",
    "deep_merge",
    "load_recipe",
    "read_with_extends",
    "resolve",
]

#: The recipe a bare ``spade train`` runs.
DEFAULT_RECIPE = "cpu_demo"


class TrainRecipe(BaseModel):
    """A whole training run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "train"
    backend: Literal["trl", "openrlhf"] = "trl"
    steps: int = Field(default=400, ge=1)
    regenerate_every: int = Field(default=4, ge=1)
    selfplay: RunConfig = RunConfig()
    model: ModelSettings = ModelSettings()
    optim: OptimSettings = OptimSettings()
    grpo: GRPOSettings = GRPOSettings()
    pool: PoolSettings = PoolSettings()
    checkpoint: CheckpointSettings = CheckpointSettings()
    #: GPU placement for the openrlhf backend (the trl backend runs on one process).
    cluster: ClusterSettings = ClusterSettings()
    tensorboard: bool = True
    method: MethodSettings = MethodSettings()
    warm_start: WarmStartSettings = WarmStartSettings()
    #: A fixed-environment baseline's problems (RLVE, Reasoning Gym, a static pool);
    #: needs ``pool.source: fixed`` and ``method.kind: fixed_env``.
    fixed_env: FixedEnvConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TrainRecipe:
        g = self.grpo
        d = self.selfplay.designer
        if g.samples_per_step % g.micro_batch_size:
            raise ValueError(f"grpo.micro_batch_size {g.micro_batch_size} must divide the "
                             f"{g.samples_per_step} samples of a step")
        if self.pool.source == "selfplay":
            if d.designs_per_prompt != g.group_size:
                raise ValueError(f"selfplay.designer.designs_per_prompt ({d.designs_per_prompt}) "
                                 f"must equal grpo.group_size ({g.group_size}): a designer "
                                 "ticket's designs are one GRPO group")
            if d.prompts_per_cycle >= g.tickets_per_step:
                raise ValueError(f"selfplay.designer.prompts_per_cycle ({d.prompts_per_cycle}) "
                                 f"must be below grpo.tickets_per_step ({g.tickets_per_step}) "
                                 "so regeneration steps also train the agent")
            if self.selfplay.policy.spec != "scripted":
                raise ValueError("selfplay.policy.spec: the trainer plays both roles with the "
                                 "model being trained; leave it 'scripted' (unused) and set "
                                 "model.path")
        if d.sampling.temperature != self.selfplay.agent.sampling.temperature \
                and self.pool.source == "selfplay":  # only a recipe built in code gets here
            raise ValueError("selfplay.agent.sampling.temperature must equal "
                             "selfplay.designer.sampling.temperature: the loss re-scores "
                             "every sample at one temperature (a recipe file sets both with "
                             "temperature)")
        if self.model.freeze_designer and self.selfplay.policy.frozen_designer is not None:
            raise ValueError("model.freeze_designer and selfplay.policy.frozen_designer both "
                             "name a frozen designer; keep one")
        if (self.fixed_env is not None) != (self.method.kind == "fixed_env"):
            raise ValueError("fixed_env and method.kind: fixed_env go together (a fixed-"
                             "environment baseline names its problems)")
        if self.fixed_env is not None and self.pool.source != "fixed":
            raise ValueError("fixed_env needs pool.source: fixed (no designer)")
        if self.warm_start.enabled and (self.pool.source != "selfplay" or self.backend != "trl"
                                        or self.model.freeze_designer):
            raise ValueError("warm_start trains the designer role: it needs pool.source "
                             "selfplay, an unfrozen designer and the trl backend")
        if self.model.use_vllm and self.model.device == "cpu":
            raise ValueError("model.use_vllm needs a GPU (model.device cpu)")
        return self

    @property
    def seed(self) -> int:
        """The run seed (``selfplay.seed``): every ticket and sample seed derives from it."""
        return self.selfplay.seed

    @property
    def temperature(self) -> float:
        """The sampling temperature of both roles (a recipe file's ``temperature``): the loss
        re-scores every sample at it."""
        return self.selfplay.agent.sampling.temperature

    def designer_tickets(self, step: int) -> int:
        """Designer tickets of ``step`` (only on regeneration steps of a self-play pool)."""
        if self.pool.source != "selfplay" or step % self.regenerate_every:
            return 0
        return self.selfplay.designer.prompts_per_cycle

    def batch_plan(self) -> dict[str, Any]:
        """The batch arithmetic of the module docstring, as numbers."""
        g, d, a = self.grpo, self.selfplay.designer, self.selfplay.agent
        regen = [s for s in range(self.steps) if self.designer_tickets(s)]
        per_regen = self.designer_tickets(0) if regen else 0
        return {
            "samples_per_step": g.samples_per_step,
            "group_size": g.group_size,
            "tickets_per_step": g.tickets_per_step,
            "micro_batch_size": g.micro_batch_size,
            "gradient_accumulation": g.samples_per_step // g.micro_batch_size,
            "regeneration_steps": len(regen),
            "designer_tickets_per_regeneration": per_regen,
            "designs_per_regeneration": per_regen * d.designs_per_prompt,
            "agent_samples_on_regeneration_steps": (g.tickets_per_step - per_regen)
            * g.group_size,
            "matched_plays_per_regeneration": per_regen * d.designs_per_prompt
            * 2 * a.plays_per_arm,
            "total_samples": g.samples_per_step * self.steps,
        }

    def identity(self) -> dict[str, Any]:
        """What a run directory is bound to (the step count may grow on resume)."""
        data = self.model_dump(mode="json")
        data.pop("steps", None)
        data["grpo"].pop("forward_tokens", None)
        if not self.warm_start.enabled:  # runs from before the stage existed keep their id
            data.pop("warm_start", None)
        return data

    def fingerprint(self) -> str:
        return fingerprint_of(self.identity())

    def file_form(self) -> dict[str, Any]:
        """The recipe as a file states it: :func:`resolve` of this is the recipe again."""
        data = self.model_dump(mode="json")
        selfplay = data["selfplay"]
        del selfplay["designer"]["designs_per_prompt"], selfplay["policy"]["spec"]
        del selfplay["cycles"], selfplay["designer"]["sampling"]["temperature"]
        data["temperature"] = selfplay["agent"]["sampling"].pop("temperature")
        if data["model"].pop("freeze_designer"):
            selfplay["policy"]["frozen_designer"] = INITIAL_WEIGHTS
        return data

    def with_overrides(self, **changes: Any) -> TrainRecipe:
        """A copy with dotted-key overrides of its file form, e.g. ``{"steps": 3}``."""
        return resolve(set_dotted(self.file_form(), changes), "overrides")


#: Keys a recipe file may not set, because training derives them, and what sets them.
DERIVED: dict[str, str] = {
    "selfplay.designer.designs_per_prompt":
        "set grpo.group_size (a designer prompt's designs are one GRPO group)",
    "selfplay.policy.spec": "set model.path (the trained model plays both roles)",
    "selfplay.cycles": "set steps (training counts optimiser steps, not cycles)",
    "model.freeze_designer": "set selfplay.policy.frozen_designer: initial",
    **{f"selfplay.{role}.sampling.temperature": "set temperature (both roles sample at it: "
       "the loss re-scores every sample at one temperature)" for role in ("designer", "agent")},
}
#: ``selfplay.policy.frozen_designer`` naming a frozen copy of the trained model's initial
#: weights (any other value is a model spec).
INITIAL_WEIGHTS = "initial"


def _has(data: Any, dotted: str) -> bool:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True


def _section(data: dict[str, Any], *keys: str) -> dict[str, Any] | None:
    """``data[k1][k2]...``, created when absent; None when something else is in the way
    (validation then names that field)."""
    for key in keys:
        if data.get(key) is None:
            data[key] = {}
        data = data[key]
        if not isinstance(data, dict):
            return None
    return data


def _share_temperature(data: dict[str, Any], temperature: Any, origin: str) -> None:
    """A recipe file's ``temperature`` as the sampling temperature of both roles."""
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) \
            or temperature < 0:
        raise UserError(f"{origin}: temperature: must be a number >= 0, got {temperature!r}")
    for role in ("designer", "agent"):
        sampling = _section(data, "selfplay", role, "sampling")
        if sampling is not None:
            sampling["temperature"] = temperature


def resolve(data: dict[str, Any], origin: str) -> TrainRecipe:
    """A recipe file's mapping (``extends:`` merged, overrides applied) as a recipe: the
    keys training derives are refused, naming the one to set, and filled in."""
    for key, instead in DERIVED.items():
        if _has(data, key):
            raise UserError(f"{origin}: {key}: derived by training; {instead}")
    data = copy.deepcopy(data)
    grpo = data.get("grpo") or {}
    group = grpo.get("group_size", GRPOSettings().group_size) if isinstance(grpo, dict) else None
    designer = _section(data, "selfplay", "designer")
    if designer is not None and isinstance(group, int) and not isinstance(group, bool):
        designer["designs_per_prompt"] = group  # a bad group size is named by grpo's check
    if "temperature" in data:
        _share_temperature(data, data.pop("temperature"), origin)
    policy = _section(data, "selfplay", "policy")
    if policy is not None and policy.get("frozen_designer") == INITIAL_WEIGHTS:
        del policy["frozen_designer"]
        model = _section(data, "model")
        if model is not None:
            model["freeze_designer"] = True
    return validate_model(TrainRecipe, data, origin)


BUNDLED = ("cpu_demo", "tiny", "learning")


def bundled_recipe(name: str) -> Path:
    """Path of a recipe shipped in ``train/recipes`` (``name`` with or without ``.yaml``)."""
    stem = name.removesuffix(".yaml")
    path = Path(str(resources.files("spade.train.recipes").joinpath(f"{stem}.yaml")))
    if not path.is_file():
        raise UserError(f"no bundled recipe {stem!r}")
    return path


def deep_merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``base``: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def own_settings(name: str, origin: str = ".") -> dict[str, Any]:
    """The settings a recipe file states itself (its ``extends:`` parent and ``name``
    aside): what a per-size recipe adds to the setting it extends. ``name`` is a file
    under ``origin`` or a bundled recipe."""
    candidate = Path(origin) / name
    path = candidate if candidate.is_file() else bundled_recipe(name)
    return {k: v for k, v in _read_mapping(path).items() if k not in ("extends", "name")}


def _read_mapping(path: Path, kind: str = "recipe") -> dict[str, Any]:
    """One YAML file's top-level mapping; every error is one line naming the file."""
    if not path.is_file():
        raise UserError(f"{kind} file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"{path}: malformed YAML{line}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping at the top level")
    return data


def read_with_extends(path: Path, bundled: Callable[[str], Path], kind: str = "recipe",
                      seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A YAML mapping with its ``extends:`` parent (a file beside it, else
    ``bundled(name)``) deep-merged under it; every error is one line naming the file."""
    if path.resolve() in seen:
        raise UserError(f"{path}: extends: forms a cycle")
    data = _read_mapping(path, kind)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise UserError(f"{path}: extends: expected a file name")
    candidate = (path.parent / parent)
    parent_path = candidate if candidate.is_file() else bundled(parent)
    return deep_merge(read_with_extends(parent_path, bundled, kind, (*seen, path.resolve())),
                      data)


def load_recipe(path: str | os.PathLike[str] | None = None) -> TrainRecipe:
    """Load and validate a recipe file (``None``: the CPU demo recipe). A bare name such as
    ``tiny`` that is not a file picks a bundled recipe."""
    if path is None:
        p = bundled_recipe(DEFAULT_RECIPE)
    else:
        p = Path(path)
        if not p.is_file() and not p.suffix and p.name == str(path):
            p = bundled_recipe(str(path))
    return resolve(read_with_extends(p, bundled_recipe), str(p))
