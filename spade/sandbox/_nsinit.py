"""The init of a worker's own pid namespace: it starts the worker, names what seccomp
refused it, and passes its end on to the fork server.

Under bwrap the fork server starts each worker with :func:`fork_isolated`: a
``clone(CLONE_NEWPID)`` child becomes pid 1 of a new namespace (without changing the
server's own, which an ``unshare`` could not repeat) and forks the worker, pid 2 there,
with ``os.fork``, so the worker's interpreter and C library see an ordinary fork. No pid
of the fork server or of a sibling names any process in the worker's namespace, and the
init ignores every signal sent from inside it. Killing the init kills the worker: the
kernel ends every process of a namespace whose pid 1 is gone.

Before that fork the init loads a seccomp filter with a listener (``SECCOMP_RET_USER_NOTIF``)
for the system calls a worker may never make and the init itself never needs (sockets,
exec, ptrace, mounts and namespaces, shared memory, ...; see ``_seccomp.NOTIFIED``). The
worker inherits it; when it makes one of those calls, the kernel holds the call and tells
the init, which kills the worker and writes the call's number to a pipe only the fork
server reads. The parent then names the call (``killed by seccomp: socket()``), from the
kernel's account, not from anything the worker said. The worker never holds the
listener: it is closed in the worker right after the fork.
"""

from __future__ import annotations

import os
import signal
from typing import Any, NoReturn

CLONE_NEWPID = 0x20000000
#: A worker's pid inside its own pid namespace (its init is pid 1).
WORKER_PID = 2
#: Exit statuses of a worker's init: the worker's exit code (at most ``SIGNALLED - 1``),
#: or ``SIGNALLED`` plus the signal that ended it (see :func:`worker_status`).
SIGNALLED = 128
#: ``SECCOMP_IOCTL_NOTIF_RECV`` (``_IOWR('!', 0, struct seccomp_notif)``, 80 bytes) in the
#: generic ioctl encoding; architectures with another encoding get no listener.
NOTIF_RECV, NOTIF_SIZE = 0xC0502100, 80
GENERIC_IOCTL = ("x86_64", "aarch64", "riscv64", "s390x")


def clone_number() -> tuple[int, bool]:
    """The ``clone`` system call's number here, and whether its first two arguments are
    swapped (s390: stack, flags); taken from libseccomp's tables."""
    import pyseccomp

    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "clone")
    return int(number), os.uname().machine.startswith("s390")


def fork_isolated(libc: Any, clone: tuple[int, bool], notify: Any = None) -> tuple[int, int]:
    """Fork a worker in a pid namespace of its own, like ``os.fork``: the worker gets
    ``(0, -1)``, the caller ``(pid of the namespace's init, fd to read the init's report
    from)`` or ``(-1, -1)`` when the fork failed. ``notify``: ``(seccomp syscall number,
    compiled listener program)``, or None for no listener."""
    report, report_w = os.pipe()
    number, swapped = clone
    flags = CLONE_NEWPID | signal.SIGCHLD
    pid = libc.syscall(number, *((0, flags) if swapped else (flags, 0)), 0, 0, 0)
    if pid != 0:
        os.close(report_w)
        if pid < 0:
            os.close(report)
            return -1, -1
        return int(pid), report
    os.close(report)
    listener = -1
    try:
        if notify is not None:
            from spade.sandbox import _seccomp

            listener = _seccomp.load_with_listener(libc, *notify)
        # SIGCHLD wakes the init's poll through a pipe (no race with the poll's start).
        wake, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, _ignore)
        signal.set_wakeup_fd(wake_w)
        worker = os.fork()
    except BaseException:
        os._exit(SIGNALLED - 1)
    if worker == 0:  # the worker: no listener, no report pipe, no wakeup fd
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (listener, report_w, wake, wake_w):
            if fd >= 0:
                os.close(fd)
        return 0, -1
    _init(worker, listener, report_w, wake)


def _ignore(signum: int, frame: Any) -> None:
    """SIGCHLD's handler in the init: the wakeup fd is what matters."""


def _init(worker: int, listener: int, report: int, wake: int) -> NoReturn:
    """Pid 1 of a worker's namespace: keep only the listener, the report pipe and the
    wakeup pipe, wait for the worker or for a refused call (then kill the worker and
    report the call's number), and exit with the worker's status encoded. Never
    returns."""
    code = SIGNALLED - 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        wake_w = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(wake_w)
        keep = sorted(fd for fd in (listener, report, wake, wake_w) if fd >= 0)
        low = 0
        for fd in keep:
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        status = _wait(worker, listener, report, wake)
        if os.WIFSIGNALED(status):
            code = SIGNALLED + os.WTERMSIG(status)
        else:
            code = min(os.waitstatus_to_exitcode(status), SIGNALLED - 1)
    finally:
        os._exit(code)


def _wait(worker: int, listener: int, report: int, wake: int) -> int:
    """The worker's wait status; a refused call ends it as seccomp's kill would (SIGSYS)."""
    import select

    poller = select.poll()
    poller.register(wake, select.POLLIN)
    if listener >= 0:
        poller.register(listener, select.POLLIN)
    while True:
        done, status = os.waitpid(worker, os.WNOHANG)
        if done == worker:
            return status
        for fd, _ in poller.poll():
            if fd == wake:
                os.read(wake, 512)
                continue
            number = _received(listener)
            if number is not None:
                os.kill(worker, signal.SIGKILL)
                os.write(report, str(number).encode())
                os.waitpid(worker, 0)
                return int(signal.SIGSYS)


def _received(listener: int) -> int | None:
    """The system call number of the next notification, or None (the call is gone)."""
    import fcntl

    notification = bytearray(NOTIF_SIZE)
    try:
        fcntl.ioctl(listener, NOTIF_RECV, notification, True)
    except OSError:
        return None
    return int.from_bytes(notification[16:20], "little", signed=True)


def worker_status(status: int) -> int:
    """The wait status of a worker, from its init's: the signal or exit code the init
    passed on; an init killed itself (the parent's kill) is reported as it is."""
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return code - SIGNALLED if code > SIGNALLED else code << 8
    return status


def refused_call(report: int) -> str | None:
    """The name of the call the init reported refusing (read once the init has ended),
    or None; never raises."""
    try:
        text = os.read(report, 32)
    except OSError:
        return None
    finally:
        os.close(report)
    if not text.isdigit():
        return None
    try:
        import pyseccomp

        name = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, int(text))
    except (ImportError, OSError, ValueError):
        return None
    name = name.decode("ascii", "replace") if isinstance(name, bytes) else str(name)
    return name if name.replace("_", "").isalnum() else None


def listener_works(libc: Any, clone: tuple[int, bool], notify: Any) -> bool:
    """Does a worker started with ``notify`` have a ``socket()`` call named by its init?
    (A kernel without user notification, or a program that did not load: no.)"""
    pid, report = fork_isolated(libc, clone, notify)
    if pid == 0:
        try:
            import pyseccomp

            libc.syscall(pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "socket"), 1, 1, 0)
        finally:
            os._exit(0)
    if pid < 0:
        return False
    status = worker_status(os.waitpid(pid, 0)[1])
    named = refused_call(report)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS and named == "socket"
