"""Per-worker kernel isolation: each worker's own pid, mount and IPC namespaces and tmp.

Under bwrap the fork server holds ``CAP_SYS_ADMIN`` in the sandbox's user namespace (and
nothing outside it). It starts every worker in a pid namespace of its own
(``_nsinit.fork_isolated``): the fork server's child is that namespace's pid 1, a small
init that forks the worker (pid 2 there), waits for it and ends with its status. Right after
that fork, before any other setup, the worker unshares a mount and an IPC namespace,
mounts a fresh tmpfs over the tmp base with a size and an inode limit the kernel
enforces, and drops every capability. From then on:

* no other process of the sandbox has a pid in its namespace: the fork server and every
  sibling worker cannot be signalled, traced, re-prioritised or even found by any call
  that takes a pid (the kernel answers ``ESRCH``); its own init ignores every signal sent
  from inside, and its death takes the worker with it;

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

from spade.sandbox._nsinit import WORKER_PID, fork_isolated, worker_status

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
    nothing else: no other worker, not the fork server, nothing of the system's.

    ``/proc`` is the sandbox's (a fresh one for the worker's pid namespace cannot be
    mounted under bwrap's covered ``/proc/sys``), so the worker's entry there is named by
    its pid in the sandbox's namespace; the view names it by the worker's own pid, so
    ``/proc/<os.getpid()>`` and ``/proc/self`` are the same directory. Thread ids inside
    it are the sandbox's (see ``_threads``)."""
    import ctypes

    pid, outer = os.getpid(), os.readlink("/proc/self")
    own, spare = f"/proc/{pid}", os.path.join(tmp_base, ".proc")

    def mount(source: Any, target: str, kind: Any, flags: int, data: Any, what: str) -> None:
        if libc.mount(source, os.fsencode(target), kind, flags, data):
            raise OSError(ctypes.get_errno(), f"the private /proc view failed ({what})")

    os.mkdir(spare)
    mount(os.fsencode(f"/proc/{outer}"), spare, None, MS_BIND, None, "bind")
    quiet = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount(b"proc-view", "/proc", b"tmpfs", quiet, b"size=4096,nr_inodes=8,mode=0755", "tmpfs")
    os.mkdir(own)
    os.symlink(str(pid), "/proc/self")
    os.symlink(f"{pid}/task/{outer}", "/proc/thread-self")
    mount(os.fsencode(spare), own, None, MS_MOVE, None, "move")
    mount(None, "/proc", None, MS_REMOUNT | MS_RDONLY | quiet, None, "read-only")
    os.rmdir(spare)


def self_test(libc: Any, tmp_base: str, capset_args: tuple[Any, Any],
              clone: tuple[int, bool]) -> None:  # fmt: skip
    """Prove, with two workers started the way the fork server starts them, that a worker
    is pid 2 of a namespace that holds no other worker (a live sibling's pid is unknown to
    it, even without seccomp), gets its own tmp with the inode limit in force, sees only
    itself in ``/proc`` and keeps no capability; RuntimeError otherwise (fail closed)."""
    import signal

    hold, release = os.pipe()
    sibling, report = fork_isolated(libc, clone)
    if sibling == 0:  # a live worker, until the test is over
        os.close(release)
        os.read(hold, 1)
        os._exit(0)
    os.close(hold)
    try:
        code = _probe_worker(libc, tmp_base, capset_args, clone, sibling)
    finally:
        os.close(release)
        if report >= 0:
            os.close(report)
        if sibling > 0:
            with _suppressed():
                os.kill(sibling, signal.SIGKILL)
                os.waitpid(sibling, 0)
    if code != 0:
        reasons = {1: "a worker could not get its own mount namespace and tmpfs",
                   2: "the tmpfs inode limit is not enforced",
                   3: "a worker kept capabilities",
                   4: "a worker's /proc shows other processes",
                   5: "a worker is not alone in a pid namespace of its own",
                   6: "a worker can reach another worker's pid"}  # fmt: skip
        why = reasons.get(code, f"exit status {code}")
        raise RuntimeError(f"per-worker isolation is unavailable: {why}")


def _probe_worker(libc: Any, tmp_base: str, capset_args: tuple[Any, Any],
                  clone: tuple[int, bool], sibling: int) -> int:  # fmt: skip
    """The self-test's worker; returns its exit code (0: every promise holds)."""
    pid, report = fork_isolated(libc, clone) if sibling > 0 else (-1, -1)
    if pid == 0:
        code = 1
        try:
            if (os.getpid(), os.getppid()) != (WORKER_PID, 1):
                code = 5
            else:
                code = 6 if _pid_exists(sibling) or _pid_exists(sibling + 1) else 1
            if code == 1:
                isolate(libc, tmp_base, tmpfs_options({"tmp_worker_mb": 1,
                                                       "tmp_worker_inodes": 0}), capset_args)
                view = sorted(os.listdir("/proc"))
                code = 2 if view == sorted([str(WORKER_PID), "self", "thread-self"]) and \
                    os.path.exists("/proc/self/stat") else 4
            if code == 2:
                for n in range(INODE_SLACK + 1):  # one more than the inodes there are
                    os.close(os.open(os.path.join(tmp_base, str(n)), os.O_CREAT | os.O_WRONLY))
        except OSError:
            if code == 2:
                code = 0 if _no_capabilities() else 3
        finally:
            os._exit(code)
    if pid < 0:
        return 1
    os.close(report)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(worker_status(status))


def _pid_exists(pid: int) -> bool:
    """Does ``pid`` name a process in the caller's pid namespace?"""
    if pid in (1, WORKER_PID):  # the sibling's number is the caller's own or its init's
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _suppressed() -> Any:
    import contextlib

    return contextlib.suppress(OSError)


def _no_capabilities() -> bool:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16):
                return False
    return True
