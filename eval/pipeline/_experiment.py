"""An experiment: which methods to train, how to score them, where results go (YAML).

    name: cpu
    results_dir: results/cpu           # the committed tables and records (--publish)
    runs_dir: runs/experiments/cpu     # runs, and the tables of each run in results/ (not
                                       # committed; large)
    eval:                              # one protocol for every method and checkpoint
      suites: [aime25, gpqa_diamond, reasoning_gym]
      preset: quick                    # paper | quick; explicit fields below override it
      limit: 5
      samples: 1
      max_tokens: 512
      batch_size: 32                   # a local model's batch (speed only, not protocol)
      checkpoints: final               # all | final_and_best | final
    heldout:                           # optional: base vs each final checkpoint, paired
      - suite: families                # held-out seeds of the starter families
        limit: 96
        checkpoints: all               # final (default) | all: the slice's curve too
      - {suite: rg_easy, limit: 48}    # one slice may also be given as a bare mapping
    methods:
      - {label: base, kind: base, model: smollm2}
      - {label: SPADE, kind: spade, recipe: cpu_demo}
      - {label: fixed-RG, kind: fixed_env, recipe: baseline_rg_cpu.yaml}

A method names a ``model`` (evaluated as it is: the base model) or a training ``recipe``
(a bundled name or a file relative to the experiment; trained, then every checkpoint is
evaluated). Unknown keys are errors naming their field.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from spade.cli._args import MAX_BATCH, MAX_FEWSHOT, MAX_SAMPLES, MAX_TOKENS
from spade.config import set_dotted, validate_model
from spade.errors import UserError
from spade.paths import project_root

__all__ = ["EvalProtocol", "Experiment", "GateSettings", "HeldoutSlice", "Method", "expand",
           "load_experiment"]

DEFAULT_EXPERIMENT = "cpu"
#: a base method's ``model`` meaning "the model every recipe of this experiment trains"
BASE_OF_RECIPES = "base-of-recipes"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: fields that change speed or bookkeeping, not what is measured
    digest_exclude: ClassVar[frozenset[str]] = frozenset()

    def digest(self) -> str:
        """A short hash of the settings that decide what is measured: runs of other
        settings get other folders, so they never clash or mix."""
        fields = self.model_dump(mode="json", exclude=set(self.digest_exclude))
        blob = json.dumps(fields, sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:10]


class EvalProtocol(_Model):
    digest_exclude: ClassVar[frozenset[str]] = frozenset({"batch_size", "checkpoints"})
    suites: tuple[str, ...] = Field(default=("aime25", "aime26", "gpqa_diamond",
                                             "livecodebench", "reasoning_gym"), min_length=1)
    preset: Literal["paper", "quick"] = "quick"
    limit: int | None = Field(default=None, ge=1)
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    #: solved demonstrations before each question (the suites must have reference answers)
    fewshot: int | None = Field(default=None, ge=0, le=MAX_FEWSHOT)
    seed: int = Field(default=0, ge=0)
    #: which checkpoints of a trained method are scored: every published one, only the
    #: final and the best (``best.txt``), or only the final one
    checkpoints: Literal["all", "final_and_best", "final"] = "all"
    #: the user simulator of tau2 / ACEBench multi-turn (a model spec; None: unavailable)
    user_model: str | None = None
    #: requests per batch of a local model (None: the provider's default); not part of
    #: the protocol, only of the speed
    batch_size: int | None = Field(default=None, ge=1, le=MAX_BATCH)

    def options(self) -> dict[str, Any]:
        """This protocol as keywords of :func:`spade.eval.cli.eval_config`."""
        return {"suites": self.suites, "preset": self.preset, "seed": self.seed,
                "protocol": {"limit": self.limit, "samples": self.samples,
                             "max_tokens": self.max_tokens, "fewshot": self.fewshot},
                "user_model": self.user_model, "batch_size": self.batch_size}


class HeldoutSlice(_Model):
    """A held-out slice: scored on the base model and every trained method's final
    checkpoint, item by item, for a one-sided paired test of final vs base (written into
    ``training.json``: ``heldout_slices``, the first slice also as ``heldout``). Its own
    protocol: the suite's preset (``paper``) with the fields given here; unset fields keep
    the preset's."""

    digest_exclude: ClassVar[frozenset[str]] = frozenset({"batch_size", "checkpoints"})

    suite: str = Field(default="families", min_length=1)
    #: ``all``: every kept checkpoint is scored too (the slice's curve over training); the
    #: paired test is still final vs base. Not part of the slice's identity: a checkpoint's
    #: per-item scores do not depend on which others are scored.
    checkpoints: Literal["final", "all"] = "final"
    limit: int | None = Field(default=None, ge=1)
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    temperature: float | None = Field(default=None, ge=0)
    seed: int = Field(default=0, ge=0)
    batch_size: int | None = Field(default=None, ge=1, le=MAX_BATCH)

    def overrides(self) -> dict[str, Any]:
        """The protocol fields this slice sets (None: the preset's)."""
        return {"samples": self.samples, "max_tokens": self.max_tokens, "limit": self.limit,
                "temperature": self.temperature}

    def options(self) -> dict[str, Any]:
        """The slice as keywords of :func:`spade.eval.cli.eval_config`: the suite's paper
        preset with the fields set here."""
        return {"suites": (self.suite,), "preset": "paper", "seed": self.seed,
                "protocol": self.overrides(), "batch_size": self.batch_size}


class Method(_Model):
    label: str = Field(min_length=1)
    #: the report's row kind (the same names as a recipe's ``method.kind``)
    kind: Literal["base", "spade", "ablation", "fixed_env"]
    model: str | None = None
    recipe: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Method:
        if (self.model is None) == (self.recipe is None):
            raise ValueError("give exactly one of model (evaluate as is) or recipe (train)")
        if self.kind == "base" and self.recipe is not None:
            raise ValueError("a base method is a model, not a recipe")
        return self

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.label).strip("-") or "method"


class GateSettings(_Model):
    """The CI gate's slice: the reference run is the base model on it."""

    digest_exclude: ClassVar[frozenset[str]] = frozenset({"reference_dir"})

    suites: tuple[str, ...] = Field(default=("gpqa_diamond",), min_length=1)
    limit: int | None = Field(default=40, ge=1)
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    max_tokens: int = Field(default=256, ge=1, le=MAX_TOKENS)
    #: sampling temperature (None: each suite's preset); 0 makes a rerun of the same
    #: checkpoint repeat the reference's answers
    temperature: float | None = Field(default=None, ge=0)
    #: solved demonstrations before each question, for models that miss the answer format
    fewshot: int = Field(default=0, ge=0, le=MAX_FEWSHOT)
    reference_dir: str = "results/gate/reference"

    def options(self) -> dict[str, Any]:
        """The slice as keywords of :func:`spade.eval.cli.eval_config` (quiet: the gate's
        verdict is its output)."""
        return {"suites": self.suites, "preset": "quick", "seed": 0, "quiet": True,
                "protocol": {"samples": self.samples, "max_tokens": self.max_tokens,
                             "limit": self.limit, "temperature": self.temperature,
                             "fewshot": self.fewshot or None}}


class Experiment(_Model):
    name: str = Field(min_length=1)
    results_dir: str
    runs_dir: str
    eval: EvalProtocol = EvalProtocol()
    methods: tuple[Method, ...] = Field(min_length=1)
    #: merged over every method's recipe (e.g. the model of a paper setting:
    #: ``{model: {path: "${SPADE_QWEN3_4B_INSTRUCT_2507}", num_params: 4.02e9}}``)
    recipe_overrides: dict[str, Any] = Field(default_factory=dict)
    #: a training recipe (a file beside the experiment, else a bundled one) whose own
    #: settings every method's recipe takes, under ``recipe_overrides``: the per-size
    #: recipe of a paper setting (model, its KL, its cluster layout), stated once there
    recipe_overlay: str | None = None
    gate: GateSettings = GateSettings()
    #: the held-out slices of the paired test final vs base, each scored and tested on its
    #: own (empty: none is scored); the first is each method's ``heldout`` record
    heldout: tuple[HeldoutSlice, ...] = ()
    #: where relative recipe files are looked up (the experiment file's folder)
    origin: str = "."

    @model_validator(mode="before")
    @classmethod
    def _overlay(cls, data: Any) -> Any:
        """``recipe_overlay``'s own settings folded under ``recipe_overrides``."""
        if not isinstance(data, dict) or not isinstance(data.get("recipe_overlay"), str):
            return data
        from spade.train.recipe import deep_merge, own_settings

        own = own_settings(data["recipe_overlay"], str(data.get("origin", ".")))
        overrides = data.get("recipe_overrides") or {}
        if not isinstance(overrides, dict):
            return data  # the field's own validation names the problem
        return {**data, "recipe_overrides": deep_merge(own, overrides)}

    @field_validator("heldout", mode="before")
    @classmethod
    def _slices(cls, value: Any) -> Any:
        """One slice (a mapping) or a list of them; ``null`` is none."""
        if value is None:
            return ()
        return (value,) if isinstance(value, (dict, HeldoutSlice)) else value

    @model_validator(mode="after")
    def _labels(self) -> Experiment:
        labels = [m.label for m in self.methods]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"method labels must be unique: {', '.join(dupes)}")
        slugs = [m.slug for m in self.methods]
        clash = sorted({m.label for m in self.methods if slugs.count(m.slug) > 1})
        if clash:  # one folder per method under runs_dir
            raise ValueError(f"method labels {', '.join(clash)} name the same folder; make "
                             "them differ in letters or digits")
        if self.heldout and not any(m.kind == "base" for m in self.methods):
            raise ValueError("heldout compares each final checkpoint with the base model: "
                             "add a method of kind base")
        suites = [h.suite for h in self.heldout]
        twice = sorted({x for x in suites if suites.count(x) > 1})
        if twice:  # each slice's rows and records are named by its suite
            raise ValueError(f"heldout: one slice per suite ({', '.join(twice)} given twice)")
        return self

    def model_spec(self, method: Method) -> str:
        """The evaluation spec of a model method; ``base-of-recipes`` is the model the
        experiment's recipes train (``recipe_overrides.model.path``)."""
        assert method.model is not None
        if method.model != BASE_OF_RECIPES:
            return expand(method.model)
        path = self.recipe_overrides.get("model", {}).get("path")
        if not path:
            raise UserError(f"method {method.label}: model {BASE_OF_RECIPES} needs "
                            "recipe_overrides.model.path")
        path = expand(str(path))
        return path if path in ("smollm2", "tiny") else f"hf:{path}"

    def output_dir(self, publish: bool = False) -> Path:
        """Where the tables, plots and records go: ``RUNS_DIR/results`` (beside the runs,
        not committed), or ``results_dir`` (the committed copy) when publishing, so a run
        never rewrites committed results unless asked to."""
        return Path(self.results_dir) if publish else Path(self.runs_dir) / "results"

    def recipe_path(self, method: Method) -> str:
        assert method.recipe is not None
        candidate = Path(self.origin) / method.recipe
        return str(candidate) if candidate.is_file() else method.recipe


def expand(spec: str) -> str:
    """``${VAR}`` in a model spec from the environment (local paths are parameters)."""
    value = os.path.expandvars(spec)
    if "${" in value:
        raise UserError(f"model {spec!r}: an environment variable in it is not set (it "
                        "should name a local model directory)")
    return value


def _bundled(name: str) -> Path:
    stem = name.removesuffix(".yaml")
    path = project_root() / "experiments" / f"{stem}.yaml"
    if not path.is_file():
        raise UserError(f"no experiment file {name!r} (and no bundled experiment of that name)")
    return path


def load_experiment(path: str | os.PathLike[str] | None = None,
                    overrides: Mapping[str, Any] | None = None) -> Experiment:
    """Load and validate an experiment (``None``: the bundled CPU experiment; a bare name
    picks a bundled one), with dotted-key ``overrides`` (``--set``) over its file."""
    p = _bundled(DEFAULT_EXPERIMENT) if path is None else Path(path)
    if path is not None and not p.is_file() and not p.suffix:
        p = _bundled(str(path))
    from spade.train.recipe import read_with_extends

    data = read_with_extends(p, _bundled, "experiment")
    data.setdefault("origin", str(p.parent))
    if overrides:
        set_dotted(data, overrides)
    return validate_model(Experiment, data, f"{p} with --set" if overrides else str(p))
