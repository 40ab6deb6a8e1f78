"""Checks made before OpenRLHF (and Ray) start: the sandbox on each node, the run
directory's filesystem.

Every rollout actor runs generated code in the SPADE sandbox, which needs bwrap to create
user, mount, pid and network namespaces. Inside a container these are often refused
(Docker's default seccomp profile blocks them; its masked ``/proc`` stops bwrap mounting
a new one; AppArmor on recent Ubuntu hosts restricts unprivileged user namespaces), and
the first ticket would then crash a run that has already loaded its weights. So the
launcher builds the same sandbox the executors build, here, before anything starts, and a
prepared job does it on every node of its Ray cluster first; a refusal is one line that
names the fix (docs/cluster.md, "The sandbox in containers").
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from spade.train.recipe import TrainRecipe

from spade.errors import UserError

__all__ = ["CONTAINER_FIX", "NETWORK_FILESYSTEMS", "check_nodes", "check_sandbox",
           "filesystem", "sandbox_problem"]

CONTAINER_FIX = ("in Docker run the container with --security-opt seccomp=unconfined "
                 "--security-opt apparmor=unconfined --security-opt systempaths=unconfined "
                 "(on the host: sysctl kernel.unprivileged_userns_clone=1 and "
                 "user.max_user_namespaces > 0), or opt out with "
                 "selfplay.sandbox.isolation: rlimits and allow_weak: true (weaker; see "
                 "docs/cluster.md)")

#: Filesystem types that are shared between hosts (``/proc/mounts`` names).
NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "ceph", "fuse.ceph", "gpfs",
    "beegfs", "glusterfs", "fuse.glusterfs", "fuse.sshfs", "9p", "afs", "fuse.s3fs",
    "fuse.gcsfuse", "fuse.juicefs", "wekafs", "fuse.weka", "panfs", "orangefs"})


def sandbox_problem(recipe: TrainRecipe) -> str | None:
    """Why this host cannot build the executors' sandbox (None: it can). Builds exactly
    the sandbox an executor builds (bwrap probe with the recipe's limits, seccomp)."""
    from spade.cycle._setup import sandbox_limits
    from spade.sandbox import Sandbox, SandboxError

    cfg = recipe.selfplay
    try:
        box = Sandbox(cfg.sandbox.isolation, sandbox_limits(cfg),
                      allow_weak=cfg.sandbox.allow_weak)
    except SandboxError as exc:
        return " ".join(str(exc).split())
    box.close()
    return None


def check_sandbox(recipe: TrainRecipe, node: str | None = None) -> None:
    """One-line :class:`UserError` when the sandbox cannot run here."""
    problem = sandbox_problem(recipe)
    if problem is not None:
        where = node or platform.node() or "this node"
        raise UserError(f"the SPADE sandbox cannot run on {where} ({problem}); {CONTAINER_FIX}")


def filesystem(path: Path) -> dict[str, Any]:
    """The filesystem type holding ``path`` (longest ``/proc/mounts`` prefix) and whether
    it is shared between hosts."""
    target = os.path.realpath(path)
    while not os.path.exists(target) and target != "/":
        target = os.path.dirname(target)
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        mounts = []
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, parts[2]
    return {"type": kind, "mount": best or None, "network": kind in NETWORK_FILESYSTEMS}


def check_nodes(recipe: TrainRecipe) -> list[str]:
    """Run :func:`sandbox_problem` on every alive node of the connected Ray cluster (one
    task pinned to each); returns one line per node that cannot build the sandbox."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    data = json.dumps(recipe.model_dump(mode="json"))

    @ray.remote(num_cpus=0)
    def node_sandbox(recipe_json: str) -> tuple[str, str | None]:
        r = TrainRecipe.model_validate(json.loads(recipe_json))
        return platform.node(), sandbox_problem(r)

    refs = [node_sandbox.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        node["NodeID"], soft=False)).remote(data) for node in ray.nodes() if node["Alive"]]
    return [f"{host}: {why}" for host, why in ray.get(refs) if why is not None]
