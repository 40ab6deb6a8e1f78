"""The one rule every long job (selfplay, eval run, train) follows for its run directory.

* The directory is the run's identity. Running the same command again with the same
  directory resumes from the last completed unit; default directories are derived from the
  inputs (:func:`default_run_dir`), so rerunning a command resumes it.
* ``--resume`` insists on resuming: a directory that holds no run is an error.
* A directory holding a run of a different identity is refused by the job's store, naming
  what differs (:data:`START_OVER` says how to start over).
* ``--new-run`` moves an existing directory aside to ``DIR.prev-N`` (never deletes it) and
  starts afresh in ``DIR``.
* Ctrl-C / SIGTERM stops after the current unit and prints
  ``interrupted; resume with: <command>`` (:func:`resume_command`), exit 130.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from spade.errors import UserError
from spade.textfile import partial_write_of

#: Appended to "different run" errors: how to start over without losing the old run.
START_OVER = "pass --new-run to move it aside and start over, or choose another directory"


def default_run_dir(kind: str, name: str, identity: Mapping[str, Any]) -> Path:
    """``runs/<kind>/<name>-<8 hex of the identity>``: the same inputs give the same path."""
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "run"
    return Path("runs") / kind / f"{safe}-{hashlib.sha256(blob).hexdigest()[:8]}"


def move_aside(path: Path) -> Path:
    """Rename ``path`` to the first free ``path.prev-N`` (N from 1) and return that name."""
    n = 1
    while (target := path.with_name(f"{path.name}.prev-{n}")).exists():
        n += 1
    path.rename(target)
    return target


def claim_run_dir(
    path: Path,
    *,
    holds_run: Callable[[Path], bool],
    own_names: Collection[str] = (),
    resume: bool = False,
    new_run: bool = False,
    say: Callable[[str], None] | None = None,
) -> bool:
    """Apply the rule before a job opens ``path``; True when an existing run is resumed.

    ``holds_run(path)`` tells whether the directory holds this kind of run; ``own_names``
    are files a run killed before its first unit may have left (they, and the temporaries
    of their atomic writes, do not count as foreign content).
    """
    if resume and new_run:
        raise UserError("--resume and --new-run exclude each other")
    if path.exists() and not path.is_dir():
        raise UserError(f"run directory {path} exists and is not a directory")
    present = path.is_dir() and any(path.iterdir())
    if new_run and present:
        moved = move_aside(path)
        if say is not None:
            say(f"moved the previous contents of {path} to {moved}")
        present = False
    holds = present and holds_run(path)
    if resume and not holds:
        where = "does not exist" if not path.exists() else "holds no run"
        raise UserError(f"--resume: run directory {path} {where}; drop --resume to start one")
    if present and not holds and not all(_own(p.name, own_names) for p in path.iterdir()):
        raise UserError(
            f"run directory {path} is not empty and holds no run; pass --new-run to move "
            "its contents aside, or choose another directory"
        )
    return holds


def _own(name: str, own_names: Collection[str]) -> bool:
    return name in own_names or partial_write_of(name) in own_names


def resume_command(prog: str, argv: Sequence[str], out_flags: Sequence[str], out: Path) -> str:
    """The command that resumes this run: ``argv`` without ``--new-run``/``--resume`` and
    with the run directory given explicitly as ``out_flags[0]`` (a default may depend on
    the working directory). Parsers are built with ``allow_abbrev=False``, so options are
    matched whole."""
    kept: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in ("--new-run", "--resume") or any(arg.startswith(f + "=") for f in out_flags):
            continue
        if arg in out_flags:
            next(args, None)
            continue
        kept.append(arg)
    return shlex.join([*shlex.split(prog), *kept, out_flags[0], str(out.resolve())])
