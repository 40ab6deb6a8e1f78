"""``spade train --backend openrlhf``: write the run's files, check, launch, publish.

The launcher prepares ``RUN_DIR/openrlhf/``:

- ``run.json`` — the resolved recipe and the run identity (what the executors read);
- ``tickets.jsonl`` — ``tickets_per_step`` prompt rows, one per ticket slot, each labelled
  ``{"run_dir": ..., "slot": k}`` (the one channel that survives ``ray job submit``);
- ``agent.py`` — the one-line file ``--train.agent_func_path`` points at;
- ``shared.db`` — the state every rollout actor shares (``train.openrlhf._shared``); for a
  fixed-environment baseline it includes the problem source's state the next step starts
  from (fresh, or the last committed step's, exactly what the TRL loop restores).

It generates the ``train_ppo_ray`` command from the version-keyed flag map, checks it
against the installed OpenRLHF's own parser, and either runs it here (one node) or prints
the ``ray job submit`` command for a cluster. OpenRLHF writes its checkpoints (DeepSpeed
state for its own resume, plus an HF export) under ``openrlhf/ckpt``; each complete HF
export of step N is published as ``RUN_DIR/checkpoints/step-N/`` with the run-store
snapshot of that step, exactly like the TRL backend's, so evaluation (``hf:RUN@latest``)
and resume work the same way.
"""

from __future__ import annotations

import json
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

from spade.errors import UserError
from train import _checkpoint as ckpt
from train._state import SNAPSHOT, TrainStore, restore_snapshot
from train.baselines import start_state
from train.openrlhf._cli import check_command, installed_version
from train.openrlhf._executor import SlotLabel
from train.openrlhf._flags import SUPPORTED, Layout, command, placement
from train.openrlhf._shared import SharedRun, snapshot_path
from train.recipe import TrainRecipe

__all__ = ["Plan", "launch", "make_plan", "prepare_run", "publish_ready", "read_run",
           "submit_command"]

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


def submit_command(plan: Plan, address: str, project_root: Path) -> list[str]:
    """``ray job submit`` for a cluster: the runtime env ships the project directory."""
    runtime = {"working_dir": str(project_root),
               "env_vars": {"TOKENIZERS_PARALLELISM": "false"}}
    return ["ray", "job", "submit", "--address", address, "--runtime-env-json",
            json.dumps(runtime, sort_keys=True), "--", "python", "-m", CLI_MODULE, *plan.args]


def dry_run_report(recipe: TrainRecipe, run_dir: Path, model_dir: str) -> dict[str, Any]:
    """What ``spade train --backend openrlhf --dry-run`` prints."""
    plan = make_plan(recipe, run_dir, model_dir, require_installed=False)
    project = Path(__file__).resolve().parents[2]
    return {
        "openrlhf_version": plan.version,
        "flags_checked": plan.flags_checked if plan.flags_checked else
        "no (OpenRLHF is not installed here; the command is checked before a real run)",
        "command": shlex.join(plan.argv),
        "ray_job_submit": shlex.join(submit_command(plan, "http://HEAD_NODE:8265", project)),
        "placement": placement(recipe),
    }


# -- run directory files -------------------------------------------------------------
def write_run(layout: Layout, recipe: TrainRecipe, identity: dict[str, Any]) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    data = {"recipe": recipe.model_dump(mode="json"), "identity": identity}
    tmp = layout.root / "run.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(layout.root / "run.json")
    rows = [{"prompt": f"SPADE ticket slot {k}",
             "label": SlotLabel(str(layout.run_dir), k).to_json()}
            for k in range(recipe.grpo.tickets_per_step)]
    layout.tickets.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    layout.agent.write_text("from train.openrlhf.agent import AgentExecutor  # noqa: F401\n",
                            encoding="utf-8")


def prepare_run(layout: Layout, recipe: TrainRecipe, identity: dict[str, Any]) -> None:
    """Write the run's files and (re)start the shared state from the run store's last
    committed step (no claims, no pending results)."""
    write_run(layout, recipe, identity)
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


def read_run(run_dir: Path) -> tuple[TrainRecipe, dict[str, Any]]:
    """The recipe and identity the launcher wrote (read by every executor)."""
    path = run_dir / "openrlhf" / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RuntimeError(f"{path}: not a SPADE openrlhf run ({exc})") from None
    return TrainRecipe.model_validate(data["recipe"]), dict(data["identity"])


# -- checkpoints ---------------------------------------------------------------------
def _exports(layout: Layout) -> list[tuple[int, Path]]:
    if not layout.ckpt.is_dir():
        return []
    found = [(int(m.group(1)), d) for d in layout.ckpt.iterdir()
             if (m := _HF.fullmatch(d.name)) and d.is_dir()]
    return sorted(found)


def publish_ready(run_dir: Path, recipe: TrainRecipe, identity: dict[str, Any],
                  manifest: dict[str, Any], *, final: bool) -> list[int]:
    """Publish every complete HF export as ``checkpoints/step-N`` (with the run-store
    snapshot of step N). An export is complete once a later one exists or the run ended."""
    layout = Layout(run_dir, "")
    exports = _exports(layout)
    done = set(ckpt.checkpoint_steps(run_dir))
    published = []
    for i, (step, source) in enumerate(exports):
        if step in done or not (final or i + 1 < len(exports)):
            continue
        snapshot = snapshot_path(run_dir, step)
        if not snapshot.is_file():
            continue  # the step's rollout was never closed: not a consistent checkpoint
        staging = ckpt.staging_dir(run_dir, step)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging)
        shutil.copyfile(snapshot, staging / SNAPSHOT)
        ckpt.publish(run_dir, step, {"last_step": step - 1, "recipe": recipe.name,
                                     "fingerprint": recipe.fingerprint(), **manifest})
        published.append(step)
    if published:
        store = TrainStore.open(run_dir, recipe, resume=True, identity=identity)
        try:
            ckpt.update_best(run_dir, store.metrics(), recipe.checkpoint.every)
        finally:
            store.close()
        ckpt.prune(run_dir, recipe.checkpoint.keep_last)
    return published


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


def launch(recipe: TrainRecipe, run_dir: Path, store: TrainStore, latest: int | None,
           model_dir: Path, identity: dict[str, Any], say: Callable[[str], None]) -> int:
    """Run OpenRLHF here until it exits, publishing checkpoints as they complete; returns
    the number of published steps. ``store`` is already rolled back to ``latest``."""
    plan = make_plan(recipe, run_dir, str(model_dir))
    layout = plan.layout
    manifest = {"backend": "openrlhf", "openrlhf_version": plan.version,
                "model_sha256": identity.get("model_sha256"), "base_model": str(model_dir)}
    store.close()
    publish_ready(run_dir, recipe, identity, manifest, final=True)
    _align_store(run_dir, layout, latest)
    prepare_run(layout, recipe, identity)
    say(f"openrlhf {plan.version}: {shlex.join(plan.argv)}")
    proc = subprocess.Popen(plan.argv)
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
    steps = ckpt.checkpoint_steps(run_dir)
    return steps[-1] if steps else 0
