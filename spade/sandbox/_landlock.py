"""Kernel-enforced filesystem restriction for one worker (Landlock).

The audit hook compares path strings; code that controls its own interpreter can get past
it (native libraries, ``dir_fd`` tricks, a removed hook). Landlock makes the same policy a
property of the process: after :func:`restrict`, the kernel refuses every open, listing,
creation, removal or truncation outside the allowed hierarchies, whatever path string,
``dir_fd``, symlink or ``/proc`` magic link was used to get there. A Landlock domain also
scopes ``ptrace``-class access (``/proc/<pid>/mem``, ``/proc/<pid>/fd``) and, from ABI 6 on,
signals and abstract unix sockets to processes inside the same domain: each worker creates
its own domain, so it cannot reach the fork server or a sibling even through ``/proc``.

Only ``ctypes`` and raw syscalls are used (no dependency). ABI levels: 1 (Linux 5.13) file
access, 2 refer, 3 truncate, 4 TCP, 5 device ioctl, 6 scoping of signals and abstract
sockets. :func:`abi` is 0 where the kernel (or a container's seccomp profile) lacks it;
the sandbox then says so and keeps its other layers.
"""

from __future__ import annotations

import os
from typing import Any

# x86_64 and aarch64 share these numbers (the syscalls came after the table unification).
_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_CHANGE_TREE = sum(1 << n for n in range(4, 13))  # remove/make dir, file, node, symlink
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2


def libc() -> Any:
    """The C library through ctypes (the fork server makes it once for its workers)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock cannot be used here."""
    try:
        version = int(libc().syscall(_CREATE, None, 0, _VERSION_FLAG))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def handled_fs(version: int) -> int:
    """Every filesystem right this ABI knows (all of them are restricted)."""
    rights = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _CHANGE_TREE
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(
    read_dirs: list[str], read_files: list[str], write_dirs: list[str], write_files: list[str],
    version: int, c_library: Any = None,
) -> None:  # fmt: skip
    """Confine the calling (single-threaded) process to the given paths, irreversibly
    (``c_library``: :func:`libc`, when the caller has it already).

    Directories grant their whole hierarchy; missing paths are skipped. Raises OSError when
    the kernel refuses (the caller treats that as a failed worker, never as "unrestricted").
    """
    import ctypes

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    lib = c_library or libc()
    fs = handled_fs(version)
    attr = RulesetAttr(fs, 3 if version >= 4 else 0,
                       SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if version >= 6 else 0)  # fmt: skip
    size = 24 if version >= 6 else (16 if version >= 4 else 8)
    ruleset = int(lib.syscall(_CREATE, ctypes.byref(attr), size, 0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    file_rights = EXECUTE | WRITE_FILE | READ_FILE | (fs & (TRUNCATE | IOCTL_DEV))
    try:
        plan = [(p, READ_ONLY) for p in read_dirs] + [(p, fs) for p in write_dirs]
        plan += [(p, EXECUTE | READ_FILE) for p in read_files]
        plan += [(p, file_rights) for p in write_files]
        for path, rights in plan:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = PathBeneath(rights & fs, fd)
                if lib.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(fd)
        if lib.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if lib.syscall(_RESTRICT, ruleset, 0):
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
