"""A run for a Ray cluster: prepared here, run there by ``ray job submit``.

``spade train --backend openrlhf --prepare`` (:func:`prepare_job`) does everything a local
launch does before OpenRLHF starts, with the model path resolved: it claims the run
directory, rolls the run store back to its latest checkpoint, checks the command against
the installed OpenRLHF when there is one, and writes ``RUN_DIR/openrlhf/`` (``run.json``
with the command, ``tickets.jsonl``, ``agent.py``, ``shared.db``). It returns the
``ray job submit`` command whose entrypoint is this module::

    python -m train.openrlhf._job RUN_DIR

which runs on the cluster: it checks that every node can build the sandbox (before any
model is loaded), runs the prepared ``train_ppo_ray`` command and publishes checkpoints as
they complete, exactly as a local launch does. ``RUN_DIR`` must be the same path on the
machine that prepares and on the cluster (prepare on the head node, or on a shared
filesystem mounted at the same path). A GPU is not needed to prepare.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade.train.recipe import TrainRecipe

from spade.errors import UserError

__all__ = ["main", "prepare_job"]


def prepare_job(recipe: TrainRecipe, run_dir: Path, *, resume: bool = False,
                new_run: bool = False, address: str | None = None,
                say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the run directory for a cluster job; returns the files and the command
    (progress lines go to ``say``, by default stderr)."""
    from spade.train._models import resolve_model_dir
    from spade.train._run import _OWN, _open_store, run_identity
    from spade.train.openrlhf._flags import check_recipe
    from spade.train.openrlhf._launch import _manifest, start, submit_command

    from spade.rundir import claim_run_dir
    from spade.store import DB_NAME

    say = say or (lambda line: print(line, file=sys.stderr))
    check_recipe(recipe)
    run_dir = run_dir.resolve()
    model_dir = resolve_model_dir(recipe.model).resolve()
    identity = run_identity(recipe, model_dir)
    claim_run_dir(run_dir, holds_run=lambda p: (p / DB_NAME).is_file(), own_names=_OWN,
                  resume=resume, new_run=new_run, say=say)
    store, latest = _open_store(run_dir, recipe, identity)
    store.close()
    plan = start(recipe, run_dir, latest, model_dir, identity, say,
                 require_installed=False)
    root = plan.layout.root
    project = Path(__file__).resolve().parents[2]
    submit = submit_command(run_dir, address or os.environ.get(
        "RAY_ADDRESS", "http://HEAD_NODE:8265"), project)
    return {"run_dir": str(run_dir), "model_dir": str(model_dir),
            "files": [str(root / n) for n in ("run.json", "tickets.jsonl", "agent.py",
                                              "shared.db")],
            "resume_from_step": latest, "flags_checked": plan.flags_checked,
            "manifest": _manifest(plan, identity), "ray_job_submit": submit}


def run_job(run_dir: Path, say: Callable[[str], None] = print) -> int:
    """The cluster side: sandbox on every node, the prepared command, publishing."""
    from spade.train.openrlhf._launch import read_run_file, supervise
    from spade.train.openrlhf._preflight import check_nodes, check_sandbox

    data = read_run_file(run_dir)
    recipe = TrainRecipe.model_validate(data["recipe"])
    identity = dict(data["identity"])
    argv = data.get("argv")
    if not argv:
        raise UserError(f"{run_dir}: prepared without a command; run spade train --prepare")
    check_sandbox(recipe)
    try:
        import ray
    except ImportError:
        ray = None
    if ray is not None:
        ray.init(address="auto", ignore_reinit_error=True)
        try:
            refused = check_nodes(recipe)
        finally:
            ray.shutdown()
        if refused:
            from spade.train.openrlhf._preflight import CONTAINER_FIX

            raise UserError(f"the SPADE sandbox cannot run on {refused[0]}"
                            + (f" (+{len(refused) - 1} more nodes)" if len(refused) > 1 else "")
                            + f"; {CONTAINER_FIX}")
    argv = [sys.executable, *argv[1:]]  # this node's interpreter, same module and flags
    manifest = dict(data.get("manifest") or {"backend": "openrlhf"})
    step = supervise(argv, run_dir, recipe, identity, manifest)
    say(json.dumps({"run_dir": str(run_dir), "last_published_step": step}))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m train.openrlhf._job RUN_DIR", file=sys.stderr)
        return 2
    try:
        return run_job(Path(args[0]))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
