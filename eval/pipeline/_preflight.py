"""The whole experiment checked before any compute is spent on it.

Training a paper experiment takes days; a misspelt suite, a model spec with a typo, an
empty benchmark file or a full disk must not surface only when its step comes. So before
``spade experiment`` trains or scores anything it checks, and lists together:

* every method: a model spec has a known form and its local path exists; a recipe loads
  (with the experiment's ``recipe_overrides``) and dry-runs (batch arithmetic); for
  training also its model, device, corpus (every line) and run directory;
* every suite of the protocol (and of the gate, for the gate actions; and the held-out
  slice's): a known name, a valid protocol, and data that loads: files present, not
  empty, parseable, with items;
* the output folders are writable, and the disk holds the checkpoints training will write
  (see :func:`disk_estimate`).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.eval.pipeline._experiment import BASE_OF_RECIPES, Experiment, Method

from spade.cli._args import writable_error
from spade.cli._boundary import describe
from spade.errors import SpadeError, UserError

__all__ = ["Checked", "check_experiment", "disk_estimate", "experiment_problems"]

GB = 1024.0 ** 3
#: SmolLM2-135M-Instruct's parameter count, for the estimate before it is first prepared
SMOLLM2_PARAMS = 134.5e6


@dataclass
class Checked:
    """What the checks found: the problems, and the numbers worth telling the user."""

    problems: list[str]
    disk_needed_gb: float = 0.0
    disk_free_gb: float | None = None


def _guard(where: str, check: Any, *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """``check``'s result, or its failure as one problem line prefixed with ``where``."""
    try:
        return check(*args, **kwargs), None
    except SpadeError as exc:
        return None, f"{where}: {exc}"
    except (OSError, ImportError, UnicodeDecodeError) as exc:
        line = describe(exc)
        if line is None:
            raise
        return None, f"{where}: {line}"


# -- methods ----------------------------------------------------------------------------
def method_recipe(exp: Experiment, m: Method) -> Any:
    """The method's recipe as training will see it: the file with the experiment's
    ``recipe_overrides`` merged over it, validated (nothing is written)."""
    from spade.train.recipe import bundled_recipe, deep_merge, read_with_extends, resolve

    path = exp.recipe_path(m)
    source = Path(path) if Path(path).is_file() else bundled_recipe(path)
    data = deep_merge(read_with_extends(source, bundled_recipe), dict(exp.recipe_overrides))
    return resolve(data, str(source))


def _check_spec(spec: str) -> str:
    """A model spec as ``spade eval run --model`` accepts it, its local path present."""
    from spade.modelspec import check_local, check_spec

    check_spec(spec, extra=("replay:FILE.jsonl", "oracle"))
    check_local(spec)
    if spec == "smollm2":
        from spade.cli._recipe_checks import smollm2_problem

        smollm2_problem()
    elif spec.startswith("replay:") and not Path(spec.removeprefix("replay:")).is_file():
        raise UserError(f"replay file not found: {spec.removeprefix('replay:')}")
    return spec


def _model_spec(exp: Experiment, m: Method) -> str:
    return _check_spec(exp.model_spec(m))


def _method_problems(exp: Experiment, m: Method, train: bool) -> tuple[list[str], Any]:
    from spade.cli._recipe_checks import dry_run_problem, recipe_problems

    where = f"method {m.label}"
    if m.model is not None:
        _, problem = _guard(where, _model_spec, exp, m)
        return [problem] if problem else [], None
    recipe, problem = _guard(f"{where}: recipe {m.recipe}", method_recipe, exp, m)
    if problem:
        return [problem], None
    if train:
        run_dir = Path(exp.runs_dir) / "train" / m.slug
        found = recipe_problems(recipe, run_dir)
    else:
        found = [p for p in [dry_run_problem(recipe)] if p]
    return [f"{where}: recipe {m.recipe}: {p}" for p in found], recipe


# -- suites -----------------------------------------------------------------------------
def eval_overrides(preset: str, given: dict[str, Any]) -> dict[str, Any]:
    """A protocol's overrides as ``spade eval run`` builds them (the preset, then the
    fields the experiment sets)."""
    from spade.eval.cli import PRESETS

    return {**PRESETS[preset], **{k: v for k, v in given.items() if v is not None}}


def _load_suite(sid: str, overrides: dict[str, Any], extra: dict[str, Any], seed: int,
                data_dir: Path) -> str | None:
    from spade.eval import _protocol
    from spade.eval.data import DataDir
    from spade.eval.suites import SUITES

    cls = SUITES.get(sid)
    suite = cls(_protocol.build(sid, overrides, extra), seed)
    try:
        loaded = suite.load(DataDir(data_dir))
        empty = [f for f in loaded.files if Path(f).is_file() and Path(f).stat().st_size == 0]
        if empty:
            return f"data file {empty[0]} is empty"
        if not loaded.items:
            shown = ", ".join(str(f) for f in loaded.files[:2]) or str(data_dir)
            return f"no items in its data ({shown})"
        suite.select(suite.take_fewshot(list(loaded.items)))
    finally:
        suite.close()
    return None


def _unparseable(sid: str, exc: Exception) -> str:
    from spade.cli._boundary import innermost_file

    path = innermost_file(exc.__traceback__)
    where = f" {path}" if path is not None else ""
    return (f"suite {sid}: its data file{where} could not be read "
            f"({type(exc).__name__}: {str(exc)[:160]})")


def suite_problems(suites: Iterable[str], overrides: dict[str, Any], extra: dict[str, Any],
                   seed: int, data_dir: Path) -> list[str]:
    """Unknown names, repeated names and data that would not load, per suite."""
    problems: list[str] = []
    suites = list(suites)
    if len(set(suites)) != len(suites):
        problems.append("suites: a suite is listed twice")
    for sid in dict.fromkeys(suites):
        try:
            problem = _guard(f"suite {sid}", _load_suite, sid, overrides, extra, seed,
                             data_dir)[1]
        except (ValueError, LookupError, TypeError) as exc:  # a parser's, on a damaged file
            problem = _unparseable(sid, exc)
        if problem:
            problems.append(problem if problem.startswith("suite ") else
                            f"suite {sid}: {problem}")
    return problems


# -- disk -------------------------------------------------------------------------------
def _safetensors_params(model_dir: Path) -> float | None:
    """Parameters of a model directory from its safetensors headers (no weights read)."""
    total = 0
    for f in sorted(model_dir.glob("*.safetensors")):
        with f.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size < 1 << 27:
                return None
            header = json.loads(fh.read(size))
        for name, entry in header.items():
            if name != "__metadata__":
                total += math.prod(entry.get("shape") or [1])
    return float(total) if total else None


def _param_count(settings: Any) -> float:
    """The model's parameter count: ``num_params``, else from the weights' headers, else
    from its config (SmolLM2's known size before it is first prepared)."""
    from spade.train._models import estimate_memory, resolve_model_dir

    if settings.num_params is not None:
        return float(settings.num_params)
    path = settings.resolved_path()
    if path == "smollm2":
        from spade.policy._smollm2 import is_prepared, smollm2_dir

        if not is_prepared(smollm2_dir()):  # not converted yet: do not convert it to count
            return SMOLLM2_PARAMS
        model_dir = smollm2_dir()
    elif path == "tiny":
        model_dir = resolve_model_dir(settings)
    else:
        model_dir = Path(path).expanduser()
    return _safetensors_params(model_dir) or estimate_memory(settings, 0.0).num_params


def disk_estimate(recipe: Any, run_dir: Path) -> float:
    """Bytes a training run still writes, roughly: each kept checkpoint (the newest
    ``keep_last`` and the best) holds the weights, the newest one also the optimiser's two
    moments (what a resume reads). Nothing for a run that is already done."""
    from spade.train._checkpoint import checkpoint_steps
    from spade.train._models import estimate_memory

    if max(checkpoint_steps(run_dir), default=0) >= recipe.steps:
        return 0.0
    settings = recipe.model.model_copy(update={"num_params": _param_count(recipe.model)})
    mem = estimate_memory(settings, 0.0)
    kept = min(recipe.checkpoint.keep_last + 1, max(1, recipe.steps // recipe.checkpoint.every))
    return (kept * mem.weights_gb + mem.optimizer_gb) * GB


def _free_bytes(path: Path) -> float | None:
    for folder in (path, *path.parents):
        if folder.exists():
            return float(shutil.disk_usage(folder).free)
    return None


# -- packages ---------------------------------------------------------------------------
#: the packages each action imports (an extra not installed is found before any compute)
NEEDS = {"train": ("torch", "transformers", "trl"), "eval": ("matplotlib",),
         "local": ("torch", "transformers")}


def missing_packages(exp: Experiment, action: str) -> list[str]:
    """One line per package the action needs that is not installed, naming its extra."""
    from spade.cli._boundary import EXTRAS
    from spade.installed import is_installed

    wanted: list[str] = []
    if action in ("train", "all"):
        wanted += NEEDS["train"]
    if action in ("eval", "all"):
        wanted += NEEDS["eval"]
    local = [m for m in exp.methods if m.recipe is not None or str(m.model).partition(":")[0]
             in ("smollm2", "hf", "vllm", "tiny", BASE_OF_RECIPES)]
    if action != "train" and local:
        wanted += NEEDS["local"]
    return [f"{name} is not installed; install the '{EXTRAS[name]}' extra: "
            f"pip install 'spade-rl[{EXTRAS[name]}]'"
            for name in dict.fromkeys(wanted) if not is_installed(name)]


# -- the whole ---------------------------------------------------------------------------
def experiment_problems(exp: Experiment, action: str, *, output: Path | None = None,
                        candidate: str | None = None) -> Checked:
    """Every problem of ``exp`` for ``action`` (train, eval, all, gate, gate-reference)."""
    from spade.eval.data import resolve_data_dir

    train = action in ("train", "all")
    problems: list[str | None] = [*missing_packages(exp, action)]
    recipes: dict[str, Any] = {}
    for m in exp.methods:
        found, recipe = _method_problems(exp, m, train)
        problems += found
        if recipe is not None:
            recipes[m.slug] = recipe
    data_dir = resolve_data_dir()
    e = exp.eval
    if action in ("gate", "gate-reference"):
        g = exp.gate
        given = {"samples": g.samples, "max_tokens": g.max_tokens, "limit": g.limit,
                 "fewshot": g.fewshot or None, "temperature": g.temperature}
        problems += suite_problems(g.suites, eval_overrides("quick", given), {}, 0, data_dir)
        if candidate is not None:
            problems.append(_guard(f"checkpoint {candidate}", _check_spec, candidate)[1])
        if action == "gate-reference":
            problems.append(writable_error(Path(g.reference_dir), directory=True))
    else:
        given = {"samples": e.samples, "max_tokens": e.max_tokens, "limit": e.limit,
                 "fewshot": e.fewshot}
        extra = {"user_model": e.user_model} if e.user_model else {}
        if e.user_model:
            problems.append(_guard("eval.user_model", _check_spec, e.user_model)[1])
        problems += suite_problems(e.suites, eval_overrides(e.preset, given), extra, e.seed,
                                   data_dir)
        for h in exp.heldout:
            problems += [f"heldout: {p}" for p in suite_problems(
                [h.suite], eval_overrides("paper", h.overrides()), {}, h.seed, data_dir)]
    problems.append(writable_error(Path(exp.runs_dir), directory=True))
    if output is not None:
        problems.append(writable_error(output, directory=True))
    checked = Checked([p for p in problems if p])
    if train:
        _check_disk(exp, recipes, checked)
    return checked


def _check_disk(exp: Experiment, recipes: dict[str, Any], checked: Checked) -> None:
    runs = Path(exp.runs_dir)
    needed = 0.0
    for slug, recipe in recipes.items():
        size, problem = _guard(f"disk estimate of {slug}", disk_estimate, recipe,
                               runs / "train" / slug)
        if problem:
            checked.problems.append(problem)
        needed += size or 0.0
    free = _free_bytes(runs)
    checked.disk_needed_gb, checked.disk_free_gb = needed / GB, None if free is None else free / GB
    if free is not None and needed > free:
        checked.problems.append(
            f"disk: training writes about {needed / GB:.1f} GB of checkpoints under {runs} "
            f"(the kept checkpoints' weights and the newest one's optimiser state), but only "
            f"{free / GB:.1f} GB are free")


def check_experiment(exp: Experiment, action: str, origin: str, **kwargs: Any) -> Checked:
    """:func:`experiment_problems`, raising one ``UserError`` that lists them all."""
    checked = experiment_problems(exp, action, **kwargs)
    if checked.problems:
        n = len(checked.problems)
        raise UserError(f"{origin}: {n} problem{'s' if n > 1 else ''}, nothing was run: "
                        + "; ".join(checked.problems))
    return checked
