"""The audit events the worker's hook looks at, grouped by what they mean.

The tables say which event is an attempt of which kind (network, process, signal,
tampering, a path to write or to read); :func:`arg_text` renders an event's arguments
for a report without running any code the environment defined.
"""

from __future__ import annotations

import os
from typing import Any

from spade.sandbox import _attribution

#: Event families that are network access.
NETWORK_PREFIXES = ("socket.", "urllib.", "http.", "ftplib.", "smtplib.", "imaplib.",
                     "poplib.", "nntplib.", "telnetlib.", "webbrowser.", "ssl.")  # fmt: skip
#: Events that start a process.
PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
     "os.forkpty", "pty.spawn", "os.startfile", "_posixsubprocess.fork_exec"}
)  # fmt: skip
#: Events that signal a process.
SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})
#: Events that reach into the interpreter's own machinery.
TAMPER_EVENTS = frozenset(
    {"sys.addaudithook", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
     "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
     "resource.setrlimit", "resource.prlimit", "code.__new__", "sys.remote_exec"}
)  # fmt: skip
#: ``fcntl`` commands that lock a file, ask about another process's lock, or watch a file
#: or directory (``F_GETLK``/``F_SETLK``/``F_SETLKW``, their open-file-description forms,
#: ``F_SETLEASE``/``F_GETLEASE``, ``F_NOTIFY``). Locks and notifications live in the
#: kernel's tables, shared by every process that opens the same file: on a file outside
#: the private tmp they are a channel to other workers (a marker nothing can unmount).
SHARED_FCNTL = frozenset({5, 6, 7, 36, 37, 38, 1024, 1025, 1026})
#: ``F_SETPIPE_SZ``: a pipe's buffer is kernel memory outside the address-space limit.
F_SETPIPE_SZ = 1031
#: Events whose string arguments are paths the code wants to change.
WRITE_EVENTS = frozenset(
    {"os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown", "os.link",
     "os.symlink", "os.truncate", "os.utime", "os.chflags", "os.lchflags", "os.lchmod",
     "os.lchown", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod",
     "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree",
     "shutil.chown", "shutil.move", "shutil.rmtree", "shutil.make_archive",
     "shutil.unpack_archive", "tempfile.mkstemp", "tempfile.mkdtemp", "sqlite3.connect",
     "dbm.open"}
)  # fmt: skip
#: Events whose string arguments are paths the code wants to read or list.
LIST_EVENTS = frozenset(
    {"os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.chdir", "os.getxattr",
     "os.listxattr", "os.fwalk", "os.readlink"}
)  # fmt: skip
#: Modules that give native code access; importing them from environment code is a violation.
NATIVE_MODULES = _attribution.NATIVE_NAMES
NATIVE_PREFIXES = _attribution.NATIVE_PREFIXES
#: Attributes that hand out a frame; reaching a sandbox frame from environment code is
#: tampering (``sys._getframe`` is checked the same way).
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: ``open`` flags that make an open a write.
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
#: Device files anything may read.
READ_FILES = frozenset({"/dev/null", "/dev/urandom", "/dev/random", "/dev/zero"})
#: Where events name a ``dir_fd``: event -> ((path index, dir_fd index), ...).
DIR_FD_ARGS = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),), "os.utime": ((0, 3),),
    "os.mkfifo": ((0, 2),), "os.mknod": ((0, 3),), "os.fwalk": ((0, 4),),
    "spade.dirfd": ((1, 3),), "os.readlink": ((0, 1),),
}  # fmt: skip
#: sqlite authorizer action code for ``ATTACH`` and its answer that refuses it.
SQLITE_ATTACH = 24
SQLITE_DENY = 1


def arg_text(value: Any, _str: Any = str, _bytes: Any = bytes, _int: Any = int,
          _tuple: Any = tuple, _list: Any = list, _type: Any = type) -> str:  # fmt: skip
    """A short rendering of an event argument that never calls foreign code (identity
    tests only: ``==`` or ``in`` could run an environment-defined ``__eq__``)."""
    kind = _type(value)
    if kind is _str:
        return value[:200]
    if kind is _bytes:
        return _bytes.decode(value, "utf-8", "surrogateescape")[:200]
    if kind is _int:
        return _str(value)
    if kind is _tuple or kind is _list:
        return "(" + ", ".join([arg_text(v) for v in value[:6]]) + ")"
    return "<" + _type.__dict__["__name__"].__get__(kind) + ">"
