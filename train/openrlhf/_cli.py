"""The installed OpenRLHF: its version and a check of a command against its own parser."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

from spade.errors import UserError

__all__ = ["check_command", "installed_version"]

_VERSION = ("import importlib.metadata as m, sys\n"
            "try:\n    print(m.version('openrlhf'))\n"
            "except m.PackageNotFoundError:\n    sys.exit(3)\n")


def installed_version(python: str = sys.executable) -> str:
    """The OpenRLHF version installed for ``python``; a one-line error when there is none."""
    try:
        done = subprocess.run([python, "-c", _VERSION], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run {python} to look for OpenRLHF: {exc}") from None
    if done.returncode == 3:
        raise UserError(f"OpenRLHF is not installed for {python} (GPU hosts: "
                        "pip install torch==2.13.0, then pip install --no-build-isolation "
                        "'spade-rl[gpu]'; see docs/cluster.md)")
    if done.returncode != 0:
        raise UserError(f"cannot read OpenRLHF's version: {done.stderr.strip()[-200:]}")
    return done.stdout.strip()


def check_command(args: Sequence[str], python: str = sys.executable) -> int:
    """Parse ``args`` with the installed ``train_ppo_ray`` parser and run its post-parse
    checks (in a subprocess, GPU stacks stubbed). Returns the CLI's flag count; raises a
    one-line :class:`UserError` naming the first rejected flag."""
    try:
        done = subprocess.run([python, "-m", "spade.train.openrlhf._probe", *args],
                              capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot check the OpenRLHF command: {exc}") from None
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        result = {}
    if not isinstance(result, dict) or "ok" not in result:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"cannot check the OpenRLHF command: {tail}")
    if not result["ok"]:
        raise UserError(f"the installed OpenRLHF rejects the generated command: "
                        f"{result['error']}")
    return int(result["flags"])
