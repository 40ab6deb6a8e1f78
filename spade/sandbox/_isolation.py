"""Per-worker kernel isolation: each worker's own mount and IPC namespaces and its own tmp.

Under bwrap the fork server holds ``CAP_SYS_ADMIN`` in the sandbox's user namespace (and
nothing outside it). Right after the fork, before any other setup, a worker unshares a
mount and an IPC namespace, mounts a fresh tmpfs over the tmp base with a size and an
inode limit the kernel enforces, and drops every capability. From then on:

* no other worker's tmp exists in its view (each tmp is a mount in a namespace of its
  own), so it can neither find nor sabotage a sibling's files, nor leave a marker for a
  later instance;
* disk use is bounded by the kernel (``ENOSPC`` at the size, also for unlinked open files;
  at the inode limit for empty files), and the whole tmp disappears with the worker's
  last process: the fork server never removes anything a worker wrote;
* System V and POSIX IPC objects live in the worker's IPC namespace and die with it (the
  worker's seccomp filter also refuses them outright, see :mod:`._seccomp`);
* its ``/proc`` holds only its own ``/proc/<pid>``: no other process of the sandbox can
  even be found there.

The fork server makes its mounts private once, so nothing a worker mounts propagates to
the server or to a sibling.
"""

from __future__ import annotations

import os
from typing import Any

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_MOVE = 1, 32, 4096, 8192
_CAP_VERSION_3 = 0x20080522
#: Inodes a worker's tmpfs has beyond ``tmp_worker_inodes`` (its root, the work dir), and
#: bytes beyond ``tmp_worker_mb``: the resource check can then still see an excess.
INODE_SLACK, BYTE_SLACK = 16, 1 << 20


def make_capset_args() -> tuple[Any, Any]:
    """The ``capset`` header and an all-zero data block (built once, in the fork server)."""
    import ctypes

    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    return header, (ctypes.c_uint32 * 6)()


def make_mounts_private(libc: Any) -> None:
    """Make every mount of the fork server's namespace private (once, before any fork), so
    a worker's tmpfs never propagates to the server or to another worker.

    ``EPERM`` means the server's mount namespace belongs to a more privileged user
    namespace (bwrap maps the sandbox uid in a second one): the kernel then turns every
    shared mount into a slave in a worker's copy, so nothing propagates back either."""
    import ctypes
    import errno

    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None):
        code = ctypes.get_errno()
        if code != errno.EPERM:
            raise OSError(code, "making the sandbox's mounts private failed")


def tmpfs_options(limits: dict[str, Any]) -> bytes:
    """The worker tmpfs's mount data: size and inode limits, owner-only root."""
    size = (int(limits.get("tmp_worker_mb", 64)) << 20) + BYTE_SLACK
    inodes = int(limits.get("tmp_worker_inodes", 4096)) + INODE_SLACK
    return f"size={size},nr_inodes={inodes},mode=0700".encode()


def isolate(libc: Any, tmp_base: str, options: bytes, capset_args: tuple[Any, Any]) -> None:
    """In a freshly forked worker: new mount and IPC namespaces, a private size- and
    inode-limited tmpfs on ``tmp_base``, then no capabilities. Raises OSError (the caller
    exits: a worker never serves without the isolation it was promised)."""
    import ctypes

    if libc.unshare(CLONE_NEWNS | CLONE_NEWIPC):
        raise OSError(ctypes.get_errno(), "unshare of the mount and IPC namespaces failed")
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"tmpfs", os.fsencode(tmp_base), b"tmpfs", flags, options):
        raise OSError(ctypes.get_errno(), "mounting the private tmp failed")
    _own_proc_view(libc, tmp_base)
    if libc.capset(*capset_args):
        raise OSError(ctypes.get_errno(), "dropping capabilities failed")


def _own_proc_view(libc: Any, tmp_base: str) -> None:
    """Replace ``/proc`` (in the worker's own mount namespace) by a read-only view that
    holds the worker's own ``/proc/<pid>`` and the ``self``/``thread-self`` links, and
    nothing else: no other worker, not the fork server, nothing of the system's."""
    import ctypes

    pid = os.getpid()
    own, spare = f"/proc/{pid}", os.path.join(tmp_base, ".proc")

    def mount(source: Any, target: str, kind: Any, flags: int, data: Any, what: str) -> None:
        if libc.mount(source, os.fsencode(target), kind, flags, data):
            raise OSError(ctypes.get_errno(), f"the private /proc view failed ({what})")

    os.mkdir(spare)
    mount(os.fsencode(own), spare, None, MS_BIND, None, "bind")
    quiet = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount(b"proc-view", "/proc", b"tmpfs", quiet, b"size=4096,nr_inodes=8,mode=0755", "tmpfs")
    os.mkdir(own)
    os.symlink(str(pid), "/proc/self")
    os.symlink(f"{pid}/task/{pid}", "/proc/thread-self")
    mount(os.fsencode(spare), own, None, MS_MOVE, None, "move")
    mount(None, "/proc", None, MS_REMOUNT | MS_RDONLY | quiet, None, "read-only")
    os.rmdir(spare)


def self_test(libc: Any, tmp_base: str, capset_args: tuple[Any, Any]) -> None:
    """Prove, in a forked child, that a worker gets its own tmp with the inode limit in
    force and keeps no capability; RuntimeError otherwise (the sandbox fails closed)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            isolate(libc, tmp_base, tmpfs_options({"tmp_worker_mb": 1,
                                                   "tmp_worker_inodes": 0}), capset_args)
            code = 4 if os.path.exists("/proc/1") or not os.path.exists("/proc/self/stat") else 2
            for n in range(INODE_SLACK + 1):  # one more than the inodes there are
                os.close(os.open(os.path.join(tmp_base, str(n)), os.O_CREAT | os.O_WRONLY))
        except OSError:
            if code == 2:
                code = 0 if _no_capabilities() else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        reasons = {1: "a worker could not get its own mount namespace and tmpfs",
                   2: "the tmpfs inode limit is not enforced",
                   3: "a worker kept capabilities",
                   4: "a worker's /proc shows other processes"}  # fmt: skip
        why = reasons.get(code, f"exit status {code}")
        raise RuntimeError(f"per-worker isolation is unavailable: {why}")


def _no_capabilities() -> bool:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16):
                return False
    return True
