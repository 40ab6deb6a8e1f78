"""The sandbox is checked before OpenRLHF starts: here (real bwrap) and under the
restriction a default Docker container applies (its seccomp profile refuses new user
namespaces), reproduced with a real seccomp filter on a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spade.train.openrlhf._preflight import NETWORK_FILESYSTEMS, filesystem, sandbox_problem
from spade.train.recipe import load_recipe

#: Docker's default profile: unshare and clone(CLONE_NEWUSER) fail with EPERM, clone3
#: with ENOSYS (so the C library falls back to clone).
_CONTAINER = """
import errno, json, sys
import pyseccomp as s
f = s.SyscallFilter(s.ALLOW)
f.add_rule(s.ERRNO(errno.EPERM), "unshare")
f.add_rule(s.ERRNO(errno.EPERM), "clone", s.Arg(0, s.MASKED_EQ, 0x10000000, 0x10000000))
f.add_rule(s.ERRNO(errno.ENOSYS), "clone3")
f.load()
from spade.errors import UserError
from spade.train.openrlhf._preflight import check_sandbox
from spade.train.recipe import load_recipe
try:
    check_sandbox(load_recipe("tiny"), node="gpu-node-0")
except UserError as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(1)
print(json.dumps({"ok": True}))
"""


def test_the_sandbox_builds_here() -> None:
    assert sandbox_problem(load_recipe("tiny")) is None


def test_a_container_without_user_namespaces_is_one_line_naming_the_fix() -> None:
    done = subprocess.run([sys.executable, "-c", _CONTAINER], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    message = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert "\n" not in message and "gpu-node-0" in message and "bwrap" in message
    assert "--security-opt seccomp=unconfined" in message
    assert "systempaths=unconfined" in message and "allow_weak" in message


def test_the_run_dir_filesystem_is_named(tmp_path: Path) -> None:
    fs = filesystem(tmp_path / "not-yet" / "run")
    assert fs["type"] != "unknown" and fs["mount"] is not None
    assert fs["network"] is (fs["type"] in NETWORK_FILESYSTEMS)
    assert {"nfs4", "lustre", "ceph", "gpfs"} <= NETWORK_FILESYSTEMS
