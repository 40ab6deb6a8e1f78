"""The worker's seccomp filter: the kernel-level backstop behind the audit hooks.

Audit hooks catch forbidden attempts made through Python and say what they were; this
filter makes the same operations impossible for code that bypasses Python (ctypes, crafted
bytecode, native extensions). Network sockets, process creation, signals or tracing aimed
at other processes and namespace changes kill the worker with SIGSYS, so a bypass still
leaves a recorded reason ("killed by seccomp") instead of a silent error. Threads stay
allowed: ``clone`` with ``CLONE_THREAD`` passes, ``clone3`` fails with ``ENOSYS`` so glibc
falls back to ``clone``.
"""

from __future__ import annotations

import errno
import os
import struct
from dataclasses import dataclass
from typing import Any

CLONE_THREAD = 0x00010000
AF_UNIX = 1
TIOCSTI = 0x5412
F_SETPIPE_SZ = 1031

#: Shared memory and IPC objects (see ``KILL_ALWAYS``).
SHARED_MEMORY = (
    "memfd_create", "memfd_secret", "shmget", "shmat", "shmctl", "shmdt", "semget",
    "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)  # fmt: skip
#: Syscalls that end the worker (SIGSYS) whatever their arguments.
KILL_ALWAYS = (
    "socket", "fork", "vfork", "execve", "execveat",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "tkill",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # Memory the address-space limit does not count, and state that outlives a worker or
    # is shared between workers: anonymous files, System V and POSIX IPC.
    *SHARED_MEMORY,
)  # fmt: skip
#: Signal syscalls allowed only when their first argument is the worker's own pid.
SIGNAL_OWN_PID = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
#: Scheduling and memory-placement calls allowed only on the worker itself (pid 0 or its
#: own pid): changing another process's priority, affinity or pages is an attack on it.
SELF_ONLY = ("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
             "migrate_pages", "move_pages")  # fmt: skip
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1

#: What a SIGSYS death means, for fault messages.
SECCOMP_KILL_REASON = (
    "killed by seccomp (SIGSYS): forbidden system call (network socket, process creation, "
    "signal, trace, priority or affinity change aimed at another process, a namespace "
    "change, or shared memory: memfd_create, System V or POSIX IPC)"
)


#: What a worker's init reports when a thread start went past ``max_threads``.
THREAD_CAP = "threads"


def seccomp_reason(refused: object) -> str:
    """What a SIGSYS death means: the call the worker's init named (the fork server's
    report, taken from the kernel's notification), else the list of what it can be."""
    if refused == THREAD_CAP:
        return ("killed by its init (SIGSYS): it started more threads than max_threads (each "
                "is a kernel task outside every memory limit)")
    if isinstance(refused, str) and 0 < len(refused) <= 32 and refused.isidentifier():
        return f"killed by seccomp (SIGSYS): forbidden system call {refused}()"
    return SECCOMP_KILL_REASON


#: Calls a worker's init refuses and names instead of the worker's own filter killing it
#: (see ``_nsinit``): every call in ``KILL_ALWAYS`` but the fork the init itself makes
#: after loading its filter and the ``unshare``/``mount`` of the worker's own setup (the
#: worker's filter kills those, and process creation and calls aimed at other pids).
NOTIFIED = tuple(n for n in KILL_ALWAYS if n not in ("fork", "vfork", "unshare", "mount"))
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 1 << 3


def _always_refused(flt: Any, action: Any, names: tuple[str, ...]) -> None:
    """Rules for ``names`` and for the refused forms of ``socketpair`` and ``ioctl``."""
    import pyseccomp as sc

    for name in names:
        _add(flt, action, name)
    # A connected pair of unix sockets stays inside the process (asyncio's self-pipe).
    _add(flt, action, "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    _add(flt, action, "ioctl", sc.Arg(1, sc.EQ, TIOCSTI))


def base_filter(notified: bool = False, processes: bool = False) -> Any:
    """The filter without the own-pid rules; built once in the fork server. ``notified``:
    the worker's init names ``NOTIFIED`` calls (its filter's user notification would lose
    to a kill here, so they are left out). ``processes``: the worker's own listener
    (:func:`process_program`, held by its init) names process creation and calls aimed at
    other pids, so here they are only refused with ``SECCOMP_RET_TRACE`` (no tracer: the
    call is skipped, ``ENOSYS``), which loses to the notification."""
    import pyseccomp as sc

    kill = sc.KILL_PROCESS
    spawn = sc.TRACE(0) if processes else kill
    flt = sc.SyscallFilter(sc.ALLOW)
    if notified:  # the init's filter holds the rest, socketpair and ioctl included
        for name in KILL_ALWAYS:
            if name not in NOTIFIED:
                _add(flt, spawn if name in ("fork", "vfork") else kill, name)
    else:
        _always_refused(flt, kill, KILL_ALWAYS)
    # Only threads: a clone without CLONE_THREAD is a new process.
    _add(flt, spawn, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    _add(flt, sc.ERRNO(errno.ENOSYS), "clone3")
    # A pipe's buffer is kernel memory the address-space limit does not count: it keeps
    # its default size (the hook names the attempt).
    _add(flt, sc.ERRNO(errno.EPERM), "fcntl", sc.Arg(1, sc.EQ, F_SETPIPE_SZ))
    # Limits may only be read (glibc's getrlimit is prlimit64 with a NULL new limit).
    _add(flt, sc.ERRNO(errno.EPERM), "setrlimit")
    _add(flt, sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(2, sc.NE, 0))
    return flt


#: What the fork server may never do (it forks and signals its own workers, nothing else;
#: a freshly forked worker unshares and mounts its own tmp before loading its own filter).
SERVER_KILL = tuple(n for n in KILL_ALWAYS
                    if n not in ("fork", "vfork", "tkill", "unshare", "mount"))


def server_filter(notified: bool = False) -> Any:
    """The fork server's own filter: workers inherit it under their stricter one.

    ``notified``: the workers' inits name ``NOTIFIED`` calls. A kill in any filter of the
    chain would win over the init's notification, so the server refuses those calls with
    ``SECCOMP_RET_TRACE`` instead: without a tracer the kernel skips the call and returns
    ``ENOSYS`` (the server never makes them; refused is as safe as killed)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    for name in SERVER_KILL:
        _add(flt, sc.TRACE(0) if notified and name in NOTIFIED else sc.KILL_PROCESS, name)
    _add(flt, sc.TRACE(0) if notified else sc.KILL_PROCESS, "ioctl", sc.Arg(1, sc.EQ, TIOCSTI))
    return flt


def notify_program() -> bytes:
    """The init's filter (``NOTIFIED`` calls go to its listener), compiled once."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    _always_refused(flt, sc.NOTIFY, NOTIFIED)
    return _exported(flt)


def load_with_listener(libc: Any, seccomp_number: int, code: bytes) -> int:
    """Load ``code`` with a new listener (``seccomp(2)``); returns the listener's fd."""
    import ctypes

    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("@HP", len(code) // _INSTRUCTION.size, ctypes.addressof(buffer))
    header = ctypes.create_string_buffer(fprog, len(fprog))
    word, zero = ctypes.c_ulong, ctypes.c_ulong(0)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, word(1), zero, zero, zero) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs could not be set")
    flags = word(SECCOMP_FILTER_FLAG_NEW_LISTENER)
    fd = libc.syscall(seccomp_number, word(SECCOMP_SET_MODE_FILTER), flags,
                      word(ctypes.addressof(header)))  # fmt: skip
    if fd < 0:
        raise OSError(ctypes.get_errno(), "the init's seccomp listener could not be loaded")
    return int(fd)


def install(own_pid: int, base: Any = None, program: WorkerProgram | None = None,
            processes: bool = False) -> None:  # fmt: skip
    """Load the worker filter for ``own_pid`` (irreversible; sets no_new_privs).

    With ``program`` (:func:`worker_program`, compiled once by the fork server) this patches
    the pid into a copy of the compiled filter and loads it, a few microseconds; otherwise
    it adds the own-pid rules to ``base`` (or a fresh base) and has libseccomp compile them,
    about two milliseconds of a worker's start.
    """
    if program is not None:
        program.load(own_pid)
        return
    import pyseccomp as sc

    _worker_filter(own_pid, base, sc.TRACE(0) if processes else None).load()


def _worker_filter(own_pid: int, base: Any = None, action: Any = None) -> Any:
    """``base`` (or a fresh base filter) plus the rules that name the worker's own pid,
    each with ``action`` (default: kill the process)."""
    import pyseccomp as sc

    flt = base_filter() if base is None else base
    kill = sc.KILL_PROCESS if action is None else action
    for name in SIGNAL_OWN_PID:
        _add(flt, kill, name, sc.Arg(0, sc.NE, own_pid))
    # A rule may test one argument once, so "neither 0 nor its own pid" is spelled as pid 1
    # and every later pid. Under bwrap that is exact: the worker is pid 2 of its own pid
    # namespace and pid 1 is its init. At level rlimits pid 1 is outside the sandbox and
    # earlier workers have lower pids (left to the kernel's same-uid rule).
    for name in SELF_ONLY:
        _add(flt, kill, name, sc.Arg(0, sc.EQ, 1))
        _add(flt, kill, name, sc.Arg(0, sc.GT, own_pid))
    # setpriority(which, who, prio) and ioprio_set(which, who, ...): a process group or a
    # whole uid is never the worker alone.
    for name in ("setpriority", "ioprio_set"):
        first = PRIO_PROCESS if name == "setpriority" else IOPRIO_WHO_PROCESS
        _add(flt, kill, name, sc.Arg(0, sc.NE, first))
        _add(flt, kill, name, sc.Arg(0, sc.EQ, first), sc.Arg(1, sc.EQ, 1))
        _add(flt, kill, name, sc.Arg(0, sc.EQ, first), sc.Arg(1, sc.GT, own_pid))
    return flt


def process_program(own_pid: int) -> bytes:
    """A worker's own listener filter (compiled once; under bwrap every worker is pid
    ``own_pid``): the ``NOTIFIED`` calls, process creation, every thread start (its init
    counts them) and every call aimed at another pid go to the listener, which the worker
    hands to its init before any environment code runs (see ``_nsinit``)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    _always_refused(flt, sc.NOTIFY, NOTIFIED)
    for name in ("fork", "vfork", "clone"):
        _add(flt, sc.NOTIFY, name)
    _add(flt, sc.ERRNO(errno.ENOSYS), "clone3")  # its flags cannot be read: glibc uses clone
    return _exported(_worker_filter(own_pid, flt, sc.NOTIFY))


#: Stand-ins for a worker's pid when the filter is compiled ahead (real pids stay below
#: 2**22, so a stand-in compiles to the same instructions a real pid does).
STAND_IN_PIDS = (2_043_453, 2_767_692)
_INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


@dataclass(frozen=True)
class WorkerProgram:
    """The worker filter compiled for a stand-in pid, and where that pid sits in it."""

    code: bytes
    slots: tuple[int, ...]  # instructions whose constant is the worker's pid
    libc: Any

    def patched(self, own_pid: int) -> bytes:
        """The program for ``own_pid`` (what libseccomp would compile for it)."""
        code = bytearray(self.code)
        for index in self.slots:
            offset = index * _INSTRUCTION.size
            op, jt, jf, _ = _INSTRUCTION.unpack_from(code, offset)
            _INSTRUCTION.pack_into(code, offset, op, jt, jf, own_pid)
        return bytes(code)

    def load(self, own_pid: int) -> None:
        """Load :meth:`patched` as this process's filter."""
        import ctypes

        code = self.patched(own_pid)
        buffer = ctypes.create_string_buffer(code, len(code))
        fprog = struct.pack("@HP", len(code) // _INSTRUCTION.size, ctypes.addressof(buffer))
        header = ctypes.create_string_buffer(fprog, len(fprog))
        word, zero = ctypes.c_ulong, ctypes.c_ulong(0)
        if self.libc.prctl(PR_SET_NO_NEW_PRIVS, word(1), zero, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs could not be set")
        mode, address = word(SECCOMP_MODE_FILTER), word(ctypes.addressof(header))
        if self.libc.prctl(PR_SET_SECCOMP, mode, address, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "the seccomp filter could not be loaded")


def worker_program(libc: Any, notified: bool = False,
                   processes: bool = False) -> WorkerProgram | None:  # fmt: skip
    """Compile the worker filter once, for two stand-in pids, and find the pid's slots.

    None unless the two programs differ exactly where one holds the first stand-in and the
    other the second (then the pid can be patched in safely); workers then compile their
    own filter.
    """
    first, second = (_compiled(pid, notified, processes) for pid in STAND_IN_PIDS)
    if len(first) != len(second) or not first or len(first) % _INSTRUCTION.size:
        return None
    slots = []
    for offset in range(0, len(first), _INSTRUCTION.size):
        a = _INSTRUCTION.unpack_from(first, offset)
        b = _INSTRUCTION.unpack_from(second, offset)
        if a[3] == STAND_IN_PIDS[0] and b[:3] == a[:3] and b[3] == STAND_IN_PIDS[1]:
            slots.append(offset // _INSTRUCTION.size)
        elif a != b or STAND_IN_PIDS[0] in (a[3], b[3]) or STAND_IN_PIDS[1] in (a[3], b[3]):
            return None
    return WorkerProgram(first, tuple(slots), libc) if slots else None


def _compiled(own_pid: int, notified: bool = False, processes: bool = False) -> bytes:
    """The BPF program libseccomp makes of the worker filter for ``own_pid``."""
    import pyseccomp as sc

    action = sc.TRACE(0) if processes else None
    return _exported(_worker_filter(own_pid, base_filter(notified, processes), action))


def _exported(flt: Any) -> bytes:
    """The BPF program libseccomp makes of ``flt``."""
    read, write = os.pipe()  # a program is at most 4096 instructions: fits the pipe
    try:
        with os.fdopen(write, "wb") as out:
            flt.export_bpf(out)
        chunks = []
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(read)


def _add(flt: Any, action: int, name: str, *args: Any) -> None:
    import pyseccomp as sc

    number = sc.resolve_syscall(sc.Arch.NATIVE, name)
    if number < 0:
        return  # not a real syscall on this architecture
    flt.add_rule(action, number, *args)
