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
from typing import Any

CLONE_THREAD = 0x00010000
AF_UNIX = 1
TIOCSTI = 0x5412

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
    "signal, trace, priority or affinity change aimed at another process, or a namespace "
    "change)"
)


def base_filter() -> Any:
    """The filter without the own-pid rules; built once in the fork server."""
    import pyseccomp as sc

    kill = sc.KILL_PROCESS
    flt = sc.SyscallFilter(sc.ALLOW)
    for name in KILL_ALWAYS:
        _add(flt, kill, name)
    # A connected pair of unix sockets stays inside the process (asyncio's self-pipe).
    _add(flt, kill, "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    # Only threads: a clone without CLONE_THREAD is a new process.
    _add(flt, kill, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    _add(flt, sc.ERRNO(errno.ENOSYS), "clone3")
    _add(flt, kill, "ioctl", sc.Arg(1, sc.EQ, TIOCSTI))
    # Limits may only be read (glibc's getrlimit is prlimit64 with a NULL new limit).
    _add(flt, sc.ERRNO(errno.EPERM), "setrlimit")
    _add(flt, sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(2, sc.NE, 0))
    return flt


#: What the fork server may never do (it forks and signals its own workers, nothing else).
SERVER_KILL = tuple(n for n in KILL_ALWAYS if n not in ("fork", "vfork", "tkill"))


def server_filter() -> Any:
    """The fork server's own filter: workers inherit it under their stricter one."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    for name in SERVER_KILL:
        _add(flt, sc.KILL_PROCESS, name)
    _add(flt, sc.KILL_PROCESS, "ioctl", sc.Arg(1, sc.EQ, TIOCSTI))
    return flt


def install(own_pid: int, base: Any = None) -> None:
    """Add the own-pid signal rules to ``base`` (or a fresh base) and load it.

    Loading is irreversible and sets no_new_privs. A forked copy of the server's base
    filter costs a fraction of a millisecond; building one from scratch costs several.
    """
    import pyseccomp as sc

    flt = base_filter() if base is None else base
    for name in SIGNAL_OWN_PID:
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.NE, own_pid))
    # A rule may test one argument once, so "neither 0 nor its own pid" is spelled as the
    # fork server (pid 1) and every later pid (later workers; earlier ones have lower pids
    # and are left to the kernel's same-uid rule, see docs/sandbox.md).
    for name in SELF_ONLY:
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.EQ, 1))
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.GT, own_pid))
    # setpriority(which, who, prio) and ioprio_set(which, who, ...): a process group or a
    # whole uid is never the worker alone.
    for name in ("setpriority", "ioprio_set"):
        first = PRIO_PROCESS if name == "setpriority" else IOPRIO_WHO_PROCESS
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.NE, first))
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.EQ, first), sc.Arg(1, sc.EQ, 1))
        _add(flt, sc.KILL_PROCESS, name, sc.Arg(0, sc.EQ, first), sc.Arg(1, sc.GT, own_pid))
    flt.load()


def _add(flt: Any, action: int, name: str, *args: Any) -> None:
    import pyseccomp as sc

    number = sc.resolve_syscall(sc.Arch.NATIVE, name)
    if number < 0:
        return  # not a real syscall on this architecture
    flt.add_rule(action, number, *args)
