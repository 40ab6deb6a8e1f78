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

The init cannot hold a listener for process creation in its own filter (its fork of the
worker would wait on itself), and a filter chain holds one listener at most, so where the
kernel allows it the init loads no filter: the worker, before any environment code, loads
one filter with a listener (``_seccomp.process_program``: the refused calls above plus
every ``fork``/``vfork``/``clone`` and every call aimed at another pid) and hands that
listener to its init over a socket pair made before the fork, then closes it. The init
names a process creation or a signal/priority call aimed elsewhere as above, and decides
every thread start: it lets the
kernel go on (``SECCOMP_USER_NOTIF_FLAG_CONTINUE``) while the worker has fewer than
``max_threads`` tasks, and otherwise ends it and reports the thread cap. The worker's own
filter only skips those calls (``SECCOMP_RET_TRACE``), so the notification wins.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
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
#: ``SECCOMP_IOCTL_NOTIF_SEND`` (``struct seccomp_notif_resp``, 24 bytes) and its flag that
#: lets the call go on.
NOTIF_SEND, NOTIF_CONTINUE = 0xC0182101, 1
GENERIC_IOCTL = ("x86_64", "aarch64", "riscv64", "s390x")
CLONE_THREAD = 0x00010000
#: What the init reports when a thread start went past the cap (``_seccomp.THREAD_CAP``).
THREAD_CAP = b"threads"


def clone_number() -> tuple[int, bool]:
    """The ``clone`` system call's number here, and whether its first two arguments are
    swapped (s390: stack, flags); taken from libseccomp's tables."""
    import pyseccomp

    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "clone")
    return int(number), os.uname().machine.startswith("s390")


def fork_isolated(libc: Any, clone: tuple[int, bool], notify: Any = None,
                  threads: int = 0) -> tuple[int, int]:  # fmt: skip
    """Fork a worker in a pid namespace of its own, like ``os.fork``: the worker gets
    ``(0, fd of its end of the handoff socket, or -1)``, the caller ``(pid of the
    namespace's init, fd to read the init's report from)`` or ``(-1, -1)`` when the fork
    failed. ``notify``: ``(seccomp syscall number, compiled listener program)``, or None
    for no listener. ``threads`` > 0: the worker hands its init a process listener (see
    :func:`hand_over`) and may run that many tasks at once."""
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
    listener = ours = theirs = -1
    try:
        if threads > 0:
            import socket

            pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            ours, theirs = pair[0].detach(), pair[1].detach()
        if notify is not None and threads <= 0:  # else the worker's own listener has it all
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
        for fd in (listener, report_w, wake, wake_w, ours):
            if fd >= 0:
                os.close(fd)
        return 0, theirs
    if theirs >= 0:
        os.close(theirs)
    _init(worker, (listener, ours, threads), report_w, wake, clone)


def _ignore(signum: int, frame: Any) -> None:
    """SIGCHLD's handler in the init: the wakeup fd is what matters."""


def _init(worker: int, listeners: tuple[int, int, int], report: int, wake: int,
          clone: tuple[int, bool]) -> NoReturn:  # fmt: skip
    """Pid 1 of a worker's namespace: keep only the listener, the handoff socket, the
    report pipe and the wakeup pipe, wait for the worker or for a refused call (then kill
    the worker and report the call's number), and exit with the worker's status encoded.
    Never returns."""
    code = SIGNALLED - 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        wake_w = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(wake_w)
        listener, handoff, _ = listeners
        keep = sorted(fd for fd in (listener, handoff, report, wake, wake_w) if fd >= 0)
        low = 0
        for fd in keep:
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        status = _wait(worker, listeners, report, wake, clone)
        if os.WIFSIGNALED(status):
            code = SIGNALLED + os.WTERMSIG(status)
        else:
            code = min(os.waitstatus_to_exitcode(status), SIGNALLED - 1)
    finally:
        os._exit(code)


def _wait(worker: int, listeners: tuple[int, int, int], report: int, wake: int,
          clone: tuple[int, bool]) -> int:  # fmt: skip
    """The worker's wait status; a refused call ends it as seccomp's kill would (SIGSYS)."""
    import select

    listener, handoff, cap = listeners
    tasks = ""  # the worker's task directory, once it handed over its listener
    processes = -1
    poller = select.poll()
    poller.register(wake, select.POLLIN)
    for fd in (listener, handoff):
        if fd >= 0:
            poller.register(fd, select.POLLIN)
    while True:
        done, status = os.waitpid(worker, os.WNOHANG)
        if done == worker:
            return status
        for fd, _ in poller.poll():
            if fd == wake:
                os.read(wake, 512)
                continue
            if fd == handoff:
                poller.unregister(handoff)
                processes, tasks = _taken_over(handoff)
                if processes >= 0:
                    poller.register(processes, select.POLLIN)
                continue
            if fd == processes:
                why = _process_call(processes, tasks, cap, clone)
            else:
                number = _received(listener)
                why = None if number is None else str(number).encode()
            if why is not None:
                os.kill(worker, signal.SIGKILL)
                os.write(report, why)
                os.waitpid(worker, 0)
                return int(signal.SIGSYS)


def hand_over(libc: Any, handoff: int, seccomp_number: int, program: bytes) -> None:
    """In a worker, before any environment code: load ``program`` with a listener and give
    the listener (and where the worker's tasks are listed) to the init; the worker keeps
    no copy. Raises OSError (the worker must not serve then)."""
    import socket

    from spade.sandbox import _seccomp

    tasks = f"/proc/{os.readlink('/proc/self')}/task".encode()
    listener = _seccomp.load_with_listener(libc, seccomp_number, program)
    try:
        with socket.socket(fileno=handoff) as channel:
            socket.send_fds(channel, [tasks], [listener])
    finally:
        os.close(listener)


def _taken_over(handoff: int) -> tuple[int, str]:
    """The worker's process listener and task directory, or (-1, "")."""
    import socket

    try:
        with socket.socket(fileno=handoff) as channel:
            data, fds, _, _ = socket.recv_fds(channel, 256, 1)
    except OSError:
        return -1, ""
    text = data.decode("ascii", "replace")
    if len(fds) != 1 or not (text.startswith("/proc/") and text.endswith("/task")):
        for fd in fds:
            os.close(fd)
        return -1, ""
    return fds[0], text


def _process_call(listener: int, tasks: str, cap: int, clone: tuple[int, bool]) -> bytes | None:
    """A process listener's notification: None when it was a thread start within the cap
    (the kernel goes on with it), else what to report (the call, or the thread cap)."""
    import fcntl

    notification = bytearray(NOTIF_SIZE)
    try:
        fcntl.ioctl(listener, NOTIF_RECV, notification, True)
    except OSError:
        return None  # the call is gone (the thread was killed meanwhile)
    order: Any = sys.byteorder
    ident = int.from_bytes(notification[0:8], order)
    number = int.from_bytes(notification[16:20], order, signed=True)
    clone_number, swapped = clone
    flags = int.from_bytes(notification[40:48] if swapped else notification[32:40], order)
    if number != clone_number or not flags & CLONE_THREAD:
        return str(number).encode()
    try:
        running = len(os.listdir(tasks))
    except OSError:
        running = cap
    if running >= cap:
        return THREAD_CAP
    answer = bytearray(24)
    answer[0:8] = ident.to_bytes(8, order)
    answer[20:24] = NOTIF_CONTINUE.to_bytes(4, order)
    with contextlib.suppress(OSError):  # the thread that asked may be gone
        fcntl.ioctl(listener, NOTIF_SEND, answer, True)
    return None


def _received(listener: int) -> int | None:
    """The system call number of the next notification, or None (the call is gone)."""
    import fcntl

    notification = bytearray(NOTIF_SIZE)
    try:
        fcntl.ioctl(listener, NOTIF_RECV, notification, True)
    except OSError:
        return None
    return int.from_bytes(notification[16:20], sys.byteorder, signed=True)


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
    if text == THREAD_CAP:
        return THREAD_CAP.decode()
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
