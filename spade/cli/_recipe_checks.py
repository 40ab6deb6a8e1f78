"""Everything a training recipe needs, checked before a model loads or a run directory
is created: the batch arithmetic (the dry run), the model, the device, the corpus (every
line) and the run directory. ``spade train`` and ``spade experiment`` both ask; each
problem is one line naming its field or file, and all of them are listed together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade.cli._args import MAX_STEPS, writable_error
from spade.cli._boundary import describe
from spade.errors import SpadeError

__all__ = ["corpus_problem", "dry_run_problem", "model_problem", "recipe_problems",
           "smollm2_problem"]


def _safely(check: Any, *args: Any) -> str | None:
    """``check(*args)``'s problem, with its UserError or machine error as the problem."""
    try:
        result = check(*args)
    except SpadeError as exc:
        return str(exc)
    except (OSError, ImportError, UnicodeDecodeError) as exc:
        line = describe(exc)
        if line is None:
            raise
        return line
    return result if isinstance(result, str) else None


def corpus_problem(name_or_path: str) -> str | None:
    """The first line of the corpus that a run would fail on (every document is parsed)."""
    from spade.corpus import load_corpus

    corpus = load_corpus(name_or_path)
    for i in range(len(corpus)):
        corpus[i]
    return None


def model_problem(settings: Any) -> str | None:
    """A recipe's ``model``: its path (variables set, a local model directory, the
    packaged SmolLM2) and the device it asks for."""
    from spade.train._models import check_device

    def device() -> None:
        check_device(settings)  # returns the device; only its refusal is a problem

    problems = [_safely(_model_path, settings), _safely(device)]
    return "; ".join(p for p in problems if p) or None


def smollm2_problem() -> str | None:
    """Whether SmolLM2 is ready or can be prepared (its package installed)."""
    from spade.policy._smollm2 import find_gguf, is_prepared, smollm2_dir

    if not is_prepared(smollm2_dir()):
        find_gguf()
    return None


def _model_path(settings: Any) -> str | None:
    path = settings.resolved_path()
    if path == "smollm2":
        smollm2_problem()
    elif path != "tiny":
        p = Path(path).expanduser()
        if not (p / "config.json").is_file():
            return (f"model.path: {p} is not a local transformers model directory "
                    "(no config.json)")
    return None


def _dry_run(recipe: Any) -> str | None:
    if recipe.steps > MAX_STEPS:
        return f"steps: {recipe.steps:,} is more than {MAX_STEPS:,}"
    recipe.batch_plan()
    if recipe.backend == "openrlhf":
        from spade.train.openrlhf import check_recipe

        check_recipe(recipe)
    return None


def dry_run_problem(recipe: Any) -> str | None:
    """What ``spade train --dry-run`` would refuse (steps, batch arithmetic, backend)."""
    return _safely(_dry_run, recipe)


def recipe_problems(recipe: Any, run_dir: Path | None = None) -> list[str]:
    """Every problem of ``recipe`` (and of ``run_dir`` when given); empty when it can run."""
    problems = [dry_run_problem(recipe), _safely(model_problem, recipe.model)]
    cfg = recipe.selfplay
    if cfg.designer.use_corpus:
        problems.append(_safely(corpus_problem, cfg.corpus.path or cfg.designer.setting))
    if run_dir is not None:
        problems.append(writable_error(run_dir, directory=True))
    return [p for p in problems if p]
