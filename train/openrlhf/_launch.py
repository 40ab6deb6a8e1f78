"""``spade train --backend openrlhf``: write the run's files, check, launch, publish.

The launcher prepares ``RUN_DIR/openrlhf/``:

- ``run.json`` — the resolved recipe and the run identity (what the executors read);
- ``tickets.jsonl`` — ``tickets_per_step`` prompt rows, one per ticket slot, each labelled
  ``{"run_dir": ..., "slot": k}`` (the one channel that survives ``ray job submit``);
- ``agent.py`` — the one-line file ``--train.agent_func_path`` points at;
- ``shared.db`` — the state every rollout actor shares (``spade.train.openrlhf._shared``); for a
  fixed-environment baseline it includes the problem source's state the next step starts
  from (fresh, or the last committed step's, exactly what the TRL loop restores).

It generates the ``train_ppo_ray`` command from the version-keyed flag map, checks it
against the installed OpenRLHF's own parser, and either runs it here (one node) or prints
the ``ray job submit`` command for a cluster. OpenRLHF writes its checkpoints (DeepSpeed
state for its own resume, plus an HF export) under ``openrlhf/ckpt``; each complete HF
export of step N is published as ``RUN_DIR/checkpoints/step-N/`` with the run-store
snapshot of that step by the TRL backend's own functions (``spade.train._driver``'s
``publish_checkpoint`` and ``rotate_checkpoints``), so evaluation (``hf:RUN@latest``) and
resume work the same way.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.train import _checkpoint as ckpt
from spade.train import _driver as driver
from spade.train._state import SNAPSHOT, TrainStore, restore_snapshot
from spade.train.baselines import start_state
from spade.train.openrlhf._cli import check_command, installed_version
from spade.train.openrlhf._executor import SlotLabel
from spade.train.openrlhf._flags import SUPPORTED, Layout, batching, command, placement
from spade.train.openrlhf._memory import disk_estimate, memory_estimate
from spade.train.openrlhf._preflight import check_sandbox, filesystem
from spade.train.openrlhf._shared import SharedRun, snapshot_path
from spade.train.recipe import TrainRecipe

from spade.errors import UserError
from spade.textfile import atomic_write_text, jsonl_text

__all__ = ["Plan", "dry_run_report", "launch", "make_plan", "prepare_run", "publish_final",
           "publish_ready", "read_run", "read_run_file", "start", "submit_command",
           "supervise"]

CLI_MODULE = "openrlhf.cli.train_ppo_ray"
_HF = re.compile(r"global_step(\d+)_hf")
_POLL_S = 20.0


@dataclass(frozen=True)
class Plan:
    """A checked (or, without OpenRLHF here, unchecked) OpenRLHF command."""

    layout: Layout
    version: str
    args: list[str]
    flags_checked: bool
    python: str

    @property
    def argv(self) -> list[str]:
        return [self.python, "-m", CLI_MODULE, *self.args]


def make_plan(recipe: TrainRecipe, run_dir: Path, model_dir: str, *,
              python: str = sys.executable, require_installed: bool = True) -> Plan:
    """The command for ``recipe``; checked against the installed CLI when OpenRLHF is
    installed (required unless ``require_installed`` is False, as for a dry run)."""
    layout = Layout(run_dir.resolve(), model_dir)
    try:
        version = installed_version(python)
    except UserError:
        if require_installed:
            raise
        version = None
    args = command(recipe, layout, version or max(SUPPORTED))
    if version is not None:
        check_command(args, python)
    return Plan(layout, version or max(SUPPORTED), args, version is not None, python)


#: Left out of the project directory Ray ships as the job's working dir (it must stay
#: small; the environment on the cluster has the packages).
SHIPPED_EXCLUDES = [".git", ".nox", ".venv", "runs", "results", "*.egg-info", "__pycache__",
                    ".pytest_cache", ".mypy_cache", ".ruff_cache"]
JOB_MODULE = "spade.train.openrlhf._job"


def submit_command(run_dir: Path, address: str, project_root: Path) -> list[str]:
    """``ray job submit`` of a prepared run: the job (``spade.train.openrlhf._job``) checks the
    sandbox on every node, runs the prepared command and publishes the checkpoints."""
    runtime = {"excludes": SHIPPED_EXCLUDES,
               "env_vars": {"TOKENIZERS_PARALLELISM": "false"}}
    return ["ray", "job", "submit", "--address", address, "--working-dir", str(project_root),
            "--runtime-env-json", json.dumps(runtime, sort_keys=True), "--",
            "python", "-m", JOB_MODULE, str(run_dir.resolve())]


def _model_path(recipe: TrainRecipe) -> tuple[str, str | None]:
    """The model directory with ``${VAR}`` resolved, or the raw path and why not."""
    try:
        return recipe.model.resolved_path(), None
    except UserError as exc:
        return recipe.model.path, str(exc)


def dry_run_report(recipe: TrainRecipe, run_dir: Path, model_dir: str | None = None
                   ) -> dict[str, Any]:
    """What ``spade train --backend openrlhf --dry-run`` prints: the command (model path
    resolved when its variable is set), placement, batching, per-GPU memory and disk."""
    unresolved = None
    if model_dir is None:
        model_dir, unresolved = _model_path(recipe)
    plan = make_plan(recipe, run_dir, model_dir, require_installed=False)
    project = Path(__file__).resolve().parents[2]
    address = os.environ.get("RAY_ADDRESS", "http://HEAD_NODE:8265")
    report: dict[str, Any] = {
        "openrlhf_version": plan.version,
        "flags_checked": plan.flags_checked if plan.flags_checked else
        "no (OpenRLHF is not installed here; the command is checked before a real run)",
        "command": shlex.join(plan.argv),
        "prepare": f"spade train --recipe {recipe.name} --backend openrlhf --run-dir "
                   f"{shlex.quote(str(run_dir))} --prepare",
        "ray_job_submit": shlex.join(submit_command(run_dir, address, project)),
        "placement": placement(recipe),
        "batching": batching(recipe),
        "memory_per_gpu": memory_estimate(recipe),
        "disk": disk_estimate(recipe),
        "run_dir_filesystem": filesystem(run_dir),
    }
    if unresolved:
        report["model_path"] = f"unresolved: {unresolved}"
    return report


# -- run directory files -------------------------------------------------------------
def write_run(layout: Layout, recipe: TrainRecipe, identity: dict[str, Any],
              argv: list[str] | None = None, manifest: dict[str, Any] | None = None) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    data = {"recipe": recipe.model_dump(mode="json"), "identity": identity,
            "model_dir": layout.model_dir, "argv": argv, "manifest": manifest}
    atomic_write_text(layout.root / "run.json", json.dumps(data, indent=2, sort_keys=True))
    rows = [{"prompt": f"SPADE ticket slot {k}",
             "label": SlotLabel(str(layout.run_dir), k).to_json()}
            for k in range(recipe.grpo.tickets_per_step)]
    layout.tickets.write_text(jsonl_text(rows), encoding="utf-8")
    layout.agent.write_text("from spade.train.openrlhf.agent import AgentExecutor  # noqa: F401\n",
                            encoding="utf-8")


def prepare_run(layout: Layout, recipe: TrainRecipe, identity: dict[str, Any],
                argv: list[str] | None = None, manifest: dict[str, Any] | None = None
                ) -> None:
    """Write the run's files and (re)start the shared state from the run store's last
    committed step (no claims, no pending results)."""
    write_run(layout, recipe, identity, argv, manifest)
    store = TrainStore.open(layout.run_dir, recipe, resume=True, identity=identity)
    try:
        state, next_step = store.load()
        fixed = None
        if recipe.fixed_env is not None:  # the baseline's source state, as the TRL loop's
            last = store.store.metrics_for(next_step - 1) if next_step else None
            fixed = start_state(recipe, last)
    finally:
        store.close()
    SharedRun(layout.run_dir, recipe, identity).initialize(state, next_step, state.pool, fixed)


def read_run_file(run_dir: Path) -> dict[str, Any]:
    """``run.json`` as written by the launcher."""
    path = run_dir / "openrlhf" / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RuntimeError(f"{path}: not a SPADE openrlhf run ({exc})") from None
    return dict(data)


def read_run(run_dir: Path) -> tuple[TrainRecipe, dict[str, Any]]:
    """The recipe and identity the launcher wrote (read by every executor)."""
    data = read_run_file(run_dir)
    return TrainRecipe.model_validate(data["recipe"]), dict(data["identity"])


# -- checkpoints ----------------------------------------------------------------------
def _exports(layout: Layout) -> list[tuple[int, Path]]:
    if not layout.ckpt.is_dir():
        return []
    found = [(int(m.group(1)), d) for d in layout.ckpt.iterdir()
             if (m := _HF.fullmatch(d.name)) and d.is_dir()]
    return sorted(found)


def _publish_export(run_dir: Path, step: int, source: Path, recipe: TrainRecipe,
                    manifest: dict[str, Any]) -> bool:
    """Move one HF export into ``checkpoints/step-N`` with the run-store snapshot of step
    N (a move, not a copy: an export is never on disk twice)."""
    snapshot = snapshot_path(run_dir, step)
    if not snapshot.is_file():
        return False  # the step's rollout was never closed: not a consistent checkpoint
    staging = ckpt.staging_dir(run_dir, step)
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), str(staging))
    shutil.copyfile(snapshot, staging / SNAPSHOT)
    driver.publish_checkpoint(run_dir, recipe, step, manifest)
    return True


def _rotate(run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any]) -> None:
    """Keep ``checkpoint.keep_last`` published steps plus the best, as on TRL."""
    store = TrainStore.open(run_dir, recipe, resume=True, identity=identity)
    try:
        metrics = store.metrics()
    finally:
        store.close()
    driver.rotate_checkpoints(run_dir, recipe, metrics)


def publish_ready(run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any],
                  manifest: dict[str, Any], *, final: bool) -> list[int]:
    """Publish every complete HF export as ``checkpoints/step-N`` (moved, with the run-store
    snapshot of step N), then rotate. An export is complete once a later one exists or the
    run ended; an export of an already published step is removed."""
    layout = Layout(run_dir, "")
    exports = _exports(layout)
    done = set(ckpt.checkpoint_steps(run_dir))
    published = []
    for i, (step, source) in enumerate(exports):
        if step in done:
            shutil.rmtree(source, ignore_errors=True)
            continue
        if not (final or i + 1 < len(exports)):
            continue
        if _publish_export(run_dir, step, source, recipe, manifest):
            published.append(step)
    if published:
        _rotate(run_dir, recipe, identity)
    return published


def publish_final(run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any],
                  manifest: dict[str, Any]) -> bool:
    """OpenRLHF saves the model once more after its last step (``--ckpt.output_dir``):
    published as the last step when no export of it exists, else removed."""
    final = Layout(run_dir, "").final
    if not (final / "config.json").is_file():
        shutil.rmtree(final, ignore_errors=True)
        return False
    moved = (recipe.steps not in ckpt.checkpoint_steps(run_dir)
             and _publish_export(run_dir, recipe.steps, final, recipe, manifest))
    shutil.rmtree(final, ignore_errors=True)
    if moved:
        _rotate(run_dir, recipe, identity)
    return moved


def _openrlhf_step(layout: Layout) -> int | None:
    """The step of OpenRLHF's own latest (DeepSpeed) checkpoint, if any."""
    latest = layout.ckpt / "_actor" / "latest"
    if not latest.is_file():
        return None
    m = re.search(r"global_step(\d+)", latest.read_text(encoding="utf-8"))
    return int(m.group(1)) if m else None


def _align_store(run_dir: Path, layout: Layout, latest: int | None) -> None:
    """Make the run store match the step OpenRLHF will resume from."""
    step = _openrlhf_step(layout)
    if step is None or step == (latest or 0):
        return
    snapshot = snapshot_path(run_dir, step)
    if not snapshot.is_file():
        raise UserError(f"OpenRLHF resumes from step {step} but {snapshot} is missing; "
                        f"start over with --new-run")
    staging = run_dir / ".openrlhf-restore"
    staging.mkdir(exist_ok=True)
    shutil.copyfile(snapshot, staging / SNAPSHOT)
    restore_snapshot(run_dir, staging)
    shutil.rmtree(staging, ignore_errors=True)


def start(recipe: TrainRecipe, run_dir: Path, latest: int | None, model_dir: Path,
          identity: dict[str, Any], say: Callable[[str], None], *,
          require_installed: bool = True) -> Plan:
    """Everything before OpenRLHF starts: the checked command, the sandbox on this node
    (where OpenRLHF is installed, i.e. where it will run), pending checkpoints published,
    the store aligned with OpenRLHF's resume point, and the run's files (``run.json`` with
    the command and manifest, tickets, agent file, shared state)."""
    plan = make_plan(recipe, run_dir, str(model_dir), require_installed=require_installed)
    if plan.flags_checked:
        check_sandbox(recipe)
    manifest = _manifest(plan, identity)
    publish_ready(run_dir, recipe, identity, manifest, final=True)
    _align_store(run_dir, plan.layout, latest)
    prepare_run(plan.layout, recipe, identity, plan.argv, manifest)
    say(f"openrlhf {plan.version}: {shlex.join(plan.argv)}")
    return plan


def _manifest(plan: Plan, identity: dict[str, Any]) -> dict[str, Any]:
    return {"backend": "openrlhf", "openrlhf_version": plan.version,
            "model_sha256": identity.get("model_sha256"), "base_model": plan.layout.model_dir}


def supervise(argv: list[str], run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any],
              manifest: dict[str, Any]) -> int:
    """Run OpenRLHF until it exits, publishing checkpoints as they complete; returns the
    last published step."""
    shutil.rmtree(Layout(run_dir, "").final, ignore_errors=True)
    proc = subprocess.Popen(argv)
    try:
        while proc.poll() is None:
            time.sleep(_POLL_S)
            publish_ready(run_dir, recipe, identity, manifest, final=False)
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=120)
        raise
    publish_ready(run_dir, recipe, identity, manifest, final=True)
    if proc.returncode != 0:
        raise UserError(f"OpenRLHF exited with status {proc.returncode} (its log is above); "
                        "rerun the same command to resume from the last checkpoint")
    publish_final(run_dir, recipe, identity, manifest)
    steps = ckpt.checkpoint_steps(run_dir)
    return steps[-1] if steps else 0


def launch(recipe: TrainRecipe, run_dir: Path, store: TrainStore, latest: int | None,
           model_dir: Path, identity: dict[str, Any], say: Callable[[str], None]) -> int:
    """Run OpenRLHF here until it exits, publishing checkpoints as they complete; returns
    the last published step. ``store`` is already rolled back to ``latest``."""
    store.close()
    plan = start(recipe, run_dir, latest, model_dir, identity, say)
    return supervise(plan.argv, run_dir, recipe, identity, _manifest(plan, identity))
